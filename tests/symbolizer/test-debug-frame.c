// SPDX-License-Identifier: Apache-2.0
/* .debug_frame without the DWARF (symbolizer/elf_module_frame.c): a program built with
 * -fno-asynchronous-unwind-tables -g has .eh_frame entries for the C runtime's code only, and its own
 * functions' unwinding rules in .debug_frame. Served by the cheaper tier (symbols only), its functions
 * still unwind, from the same rules the full tier finds, and no other DWARF section is read. The
 * programs are argv[1..]: a plain build and one with compressed debug sections (-gz). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "elf_module.h"
#include "elf_symbol.h"

static char **programs;
static int nprograms;

static struct elf_module *open_tier(const char *path, bool symbols_only)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	return elf_module_open(fd, &(struct elf_module_options){ .root_fd = -1, .symbols_only = symbols_only });
}

static void test_symbols_tier_unwinds(void **state)
{
	(void)state;
	for (int i = 0; i < nprograms; i++) {
		struct elf_module *cheap = open_tier(programs[i], true), *full = open_tier(programs[i], false);
		const char *names[] = { "main", "leaf" };

		assert_non_null(cheap);
		assert_non_null(full);
		assert_false(elf_module_has_dwarf(cheap));
		assert_true(elf_module_has_dwarf(full));
		for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
			uint64_t at = symbol_vaddr(programs[i], names[j]);
			struct cfi_rule a, b;

			/* One byte in: past the function's first instruction, inside its FDE. */
			assert_int_equal(elf_module_cfi_rule(cheap, at + 1, &a), 0);
			assert_int_equal(elf_module_cfi_rule(full, at + 1, &b), 0);
			printf("%s %s: found %d (full tier %d)\n", programs[i], names[j], a.found, b.found);
			assert_true(a.found);
			assert_true(b.found);
			assert_int_equal(a.cfa.kind, b.cfa.kind);
			assert_int_equal(a.ra.kind, b.ra.kind);
			assert_int_equal(a.nops, b.nops);
			for (unsigned k = 0; k < a.nops; k++) {
				assert_int_equal(a.ops[k].atom, b.ops[k].atom);
				assert_int_equal(a.ops[k].n1, b.ops[k].n1);
				assert_int_equal(a.ops[k].n2, b.ops[k].n2);
			}
		}
		/* What the cheaper tier holds: the section and its copy; with compressed debug sections
		 * (the second program), far less than the DWARF the full tier inflates. */
		printf("%s: symbols tier %zu bytes, full tier %zu bytes\n", programs[i], elf_module_bytes(cheap),
		       elf_module_bytes(full));
		if (i == 1)
			assert_true(elf_module_bytes(cheap) < elf_module_bytes(full));
		assert_false(elf_module_has_dwarf(cheap)); /* the rules came without opening the DWARF */
		elf_module_free(cheap);
		elf_module_free(full);
	}
}

/* A module bound too small for the section: refused, counted, no rule (and no crash). */
static void test_frame_over_bound(void **state)
{
	int fd = open(programs[0], O_RDONLY | O_CLOEXEC);
	struct elf_module *m;
	struct cfi_rule r;

	(void)state;
	assert_true(fd >= 0);
	m = elf_module_open(fd, &(struct elf_module_options){ .root_fd = -1, .symbols_only = true });
	assert_non_null(m);
	elf_module_free(m);
	/* Under a bound of one byte: nothing more is afforded, the section is not read. */
	fd = open(programs[0], O_RDONLY | O_CLOEXEC);
	m = elf_module_open(fd, &(struct elf_module_options){ .root_fd = -1, .symbols_only = true,
							      .max_bytes = 1 });
	if (m) {
		assert_int_equal(elf_module_cfi_rule(m, symbol_vaddr(programs[0], "leaf") + 1, &r), 0);
		assert_false(r.found);
		elf_module_free(m);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symbols_tier_unwinds),
		cmocka_unit_test(test_frame_over_bound),
	};

	programs = argv + 1;
	nprograms = argc - 1;
	if (nprograms < 1) {
		fprintf(stderr, "usage: %s PROGRAM...\n", argv[0]);
		return 2;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
