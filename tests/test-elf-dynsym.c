// SPDX-License-Identifier: Apache-2.0
/*
 * Symbols by .gnu.hash (process/elf_dynsym.c) against the entry-by-entry scan, on the machine's
 * libc (every one of its exported names, and names it lacks), and on copies of it whose hash table
 * was damaged: the lookup answers what the scan answers, or nothing, and never reads out of bounds
 * (the ASan build runs this too).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/elf_dynsym.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define MAX_ENTRIES 1000000

static bool is_func(const GElf_Sym *sym)
{
	return GELF_ST_TYPE(sym->st_info) == STT_FUNC;
}

/* Both ways agree on want (a copy each). */
static void agree(Elf *elf, struct elf_dynsym_want *want, size_t n)
{
	struct elf_dynsym_want *scan = calloc(n, sizeof(*scan));
	size_t by_hash, by_scan;

	assert_non_null(scan);
	memcpy(scan, want, n * sizeof(*want));
	by_hash = elf_dynsym_lookup(elf, want, n, MAX_ENTRIES);
	by_scan = elf_dynsym_lookup_scan(elf, scan, n, MAX_ENTRIES);
	assert_int_equal(by_hash, by_scan);
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(want[k].found, scan[k].found);
		if (want[k].found) {
			assert_int_equal(want[k].index, scan[k].index);
			assert_int_equal(want[k].sym.st_value, scan[k].sym.st_value);
		}
	}
	free(scan);
}

static void test_libc(void **state)
{
	int fd = open(LIBC, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	struct elf_dynsym_want few[] = {
		{ .name = "malloc" }, { .name = "printf", .accept = is_func }, { .name = "no_such_symbol_anywhere" },
		{ .name = "" }, { .name = "errno" /* TLS in libc: no STT_FUNC */, .accept = is_func },
	};

	(void)state;
	if (fd < 0)
		skip();
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(elf);
	agree(elf, few, sizeof(few) / sizeof(few[0]));
	assert_true(few[0].found);
	assert_true(few[1].found);
	assert_false(few[2].found);
	assert_false(few[4].found);

	/* Every name in .dynsym, both ways. */
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !(data = elf_getdata(scn, NULL)))
			continue;
		size_t n = sh.sh_size / sh.sh_entsize;
		struct elf_dynsym_want *all = calloc(n, sizeof(*all));

		assert_non_null(all);
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;

			gelf_getsym(data, (int)i, &sym);
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			all[i].name = name ? name : "";
		}
		/* In chunks: the scan stops once all of a call's names are found. */
		for (size_t i = 0; i < n; i += 64)
			agree(elf, all + i, n - i < 64 ? n - i : 64);
		free(all);
		break;
	}
	elf_end(elf);
	close(fd);
}

/* A copy of libc with the .gnu.hash header's word at word_index set to value. */
static int damaged_copy(size_t word_index, uint32_t value)
{
	char path[] = "/tmp/otelprofd-dynsym-XXXXXX";
	int in = open(LIBC, O_RDONLY | O_CLOEXEC), out = mkstemp(path);
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	char buf[65536];
	ssize_t n;
	off_t at = -1;

	assert_true(in >= 0 && out >= 0);
	unlink(path);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	elf = elf_begin(in, ELF_C_READ, NULL);
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_HASH)
			at = (off_t)sh.sh_offset;
	elf_end(elf);
	close(in);
	assert_true(at >= 0);
	assert_int_equal(pwrite(out, &value, sizeof(value), at + (off_t)(word_index * 4)), sizeof(value));
	return out;
}

static void test_damaged_hash(void **state)
{
	/* nbuckets 0, nbuckets and bloom size past the section, symoffset past every bucket's index. */
	static const struct { size_t word; uint32_t value; } damage[] = {
		{ 0, 0 }, { 0, 0xffffffffu }, { 2, 0x7fffffffu }, { 1, 0xfffffff0u }, { 1, 0 },
	};

	(void)state;
	if (access(LIBC, R_OK))
		skip();
	elf_version(EV_CURRENT);
	for (size_t i = 0; i < sizeof(damage) / sizeof(damage[0]); i++) {
		int fd = damaged_copy(damage[i].word, damage[i].value);
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		struct elf_dynsym_want want[] = { { .name = "malloc" }, { .name = "free" }, { .name = "nope" } };
		size_t found;

		assert_non_null(elf);
		found = elf_dynsym_lookup(elf, want, 3, MAX_ENTRIES);
		/* Either the hash still holds together or the scan answered: the right symbols, or none. */
		assert_true(found <= 2);
		assert_false(want[2].found);
		elf_end(elf);
		close(fd);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_libc),
		cmocka_unit_test(test_damaged_hash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
