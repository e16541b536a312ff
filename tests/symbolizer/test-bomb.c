// SPDX-License-Identifier: Apache-2.0
/*
 * Decompression bombs (gen-bomb.py): a binary whose four .debug_* sections share one zlib stream
 * claiming 1008 MiB each, the same at a plausible ratio (64 MiB each), and stripped copies reaching
 * them through .gnu_debuglink or a build-id directory. Each must be refused before libdw inflates it
 * (counted), keep its build id and ELF symbols, and leave the peak RSS far below what inflating
 * would take. Usage: test-sym-bomb DIR INL_GZ (DIR holds spin-bomb*, spin-noise*).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_module.h"
#include "elf_symbol.h"
#include "symbolizer.h"

#define BOUND (64u << 20)
/* Peak RSS growth allowed over the whole test: one inflated bomb would take 256 MiB to 4 GiB. */
#define MAX_GROWTH_KIB (200u << 10)

static const char *dir, *inl_gz;
static long hwm_start;

static long vm_hwm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long kib = -1;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void path_of(char *out, size_t size, const char *name)
{
	assert_true((size_t)snprintf(out, size, "%s/%s", dir, name) < size);
}

static struct elf_module *open_module(const char *name, const char *const *debug_dirs, size_t max_bytes)
{
	static const char *const none[] = { NULL };
	char path[4096];
	int fd;

	path_of(path, sizeof(path), name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	return elf_module_open(fd, &(struct elf_module_options){
		.root_fd = -1, .path = path, .debug_dirs = debug_dirs ? debug_dirs : none, .max_bytes = max_bytes,
	});
}

/* Refused, counted, and still a module: build id, offsets, ELF symbols (never compressed). */
static void check_refused(struct elf_module *m, const char *symbol_file, unsigned refusals)
{
	char path[4096];
	struct sym_frame f = { 0 };

	assert_non_null(m);
	assert_int_equal(elf_module_counters(m)->inflate_refused, refusals);
	assert_false(elf_module_has_dwarf(m));
	assert_non_null(elf_module_build_id(m));
	assert_true(elf_module_bytes(m) < BOUND);
	path_of(path, sizeof(path), symbol_file);
	assert_int_equal(elf_module_symbolize(m, symbol_vaddr(path, "bomb_spin"), &f), 1);
	assert_string_equal(f.lines[0].function, "bomb_spin");
	elf_module_free(m);
}

static void test_direct(void **state)
{
	(void)state;
	check_refused(open_module("spin-bomb", NULL, BOUND), "spin-bomb", 1);
	/* Forged ratio (1029:1): refused whatever the bound. */
	check_refused(open_module("spin-bomb", NULL, 0), "spin-bomb", 1);
	/* Plausible ratio (~140:1): refused by the bound alone. */
	check_refused(open_module("spin-noise", NULL, BOUND), "spin-noise", 1);
}

static void test_debuglink(void **state)
{
	(void)state;
	/* Beside the binary, through .gnu_debuglink. */
	check_refused(open_module("spin-bomb-link", NULL, BOUND), "spin-bomb-link", 1);
	check_refused(open_module("spin-noise-link", NULL, BOUND), "spin-noise-link", 1);
}

static void test_build_id_dir(void **state)
{
	char tmp[] = "/tmp/otelprof-bomb.XXXXXX", path[4096], target[4096], id[129];
	const char *dirs[] = { tmp, NULL };
	struct elf_module *m;

	(void)state;
	assert_non_null(mkdtemp(tmp));
	m = open_module("spin-bomb-link", (const char *const[]){ "/nonexistent", NULL }, BOUND);
	assert_non_null(m);
	assert_non_null(elf_module_build_id(m));
	snprintf(id, sizeof(id), "%s", elf_module_build_id(m));
	elf_module_free(m);
	snprintf(path, sizeof(path), "%s/.build-id", tmp);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s", tmp, id);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", tmp, id, id + 2);
	path_of(target, sizeof(target), "spin-bomb.debug");
	assert_int_equal(symlink(target, path), 0);

	/* Found in the build-id directory, then again beside the binary: refused both times. */
	m = open_module("spin-bomb-link", dirs, BOUND);
	check_refused(m, "spin-bomb-link", 2);
	unlink(path);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s", tmp, id);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/.build-id", tmp);
	rmdir(path);
	rmdir(tmp);
}

/* An honest compressed binary: its DWARF is refused under a bound smaller than its inflated
 * sections, and opened under one that holds them. */
static void test_honest_bound(void **state)
{
	struct stat st;
	struct elf_module *m;
	int fd;

	(void)state;
	assert_int_equal(stat(inl_gz, &st), 0);
	fd = open(inl_gz, O_RDONLY | O_CLOEXEC);
	m = elf_module_open(fd, &(struct elf_module_options){ .root_fd = -1, .max_bytes = (size_t)st.st_size + 4096 });
	assert_non_null(m);
	assert_false(elf_module_has_dwarf(m));
	assert_int_equal(elf_module_counters(m)->inflate_refused, 1);
	elf_module_free(m);
	fd = open(inl_gz, O_RDONLY | O_CLOEXEC);
	m = elf_module_open(fd, &(struct elf_module_options){ .root_fd = -1, .max_bytes = BOUND });
	assert_non_null(m);
	assert_true(elf_module_has_dwarf(m));
	assert_int_equal(elf_module_counters(m)->inflate_refused, 0);
	elf_module_free(m);
}

/* Through the symbolizer: the bomb mapped into this process is looked up like any binary. */
static void test_symbolizer(void **state)
{
	struct symbolizer *s = symbolizer_new(&(struct symbolizer_config){ .max_module_bytes = BOUND });
	const char *names[] = { "spin-bomb", "spin-noise", "spin-bomb-link" };
	void *maps[3];
	size_t sizes[3];

	(void)state;
	for (int i = 0; i < 3; i++) {
		char path[4096];
		struct stat st;
		struct sym_frame f;
		int fd;

		path_of(path, sizeof(path), names[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(fstat(fd, &st), 0);
		sizes[i] = (size_t)st.st_size;
		maps[i] = mmap(NULL, sizes[i], PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		close(fd);
		assert_true(maps[i] != MAP_FAILED);
		/* Mapped from offset 0: the address of a file offset is the map's start plus it. */
		assert_int_equal(symbolizer_user(s, getpid(),
						 (uint64_t)(uintptr_t)maps[i] + symbol_vaddr(path, "bomb_spin"), &f), 0);
		assert_true(f.has_mapping);
		assert_non_null(f.mapping.build_id);
		assert_int_equal(f.nlines, 1);
		assert_string_equal(f.lines[0].function, "bomb_spin");
	}
	/* The three share one build id: however the cache folds them, the bomb was refused. */
	assert_true(symbolizer_stats(s)->modules_too_big >= 1);
	assert_true(symbolizer_stats(s)->module_bytes <= BOUND);
	for (int i = 0; i < 3; i++)
		munmap(maps[i], sizes[i]);
	symbolizer_free(s);
}

static void test_memory(void **state)
{
	long growth = vm_hwm_kib() - hwm_start;

	(void)state;
	print_message("peak RSS grew by %ld KiB over the bombs\n", growth);
	assert_true(growth < MAX_GROWTH_KIB);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_debuglink),
		cmocka_unit_test(test_build_id_dir),
		cmocka_unit_test(test_honest_bound),
		cmocka_unit_test(test_symbolizer),
		cmocka_unit_test(test_memory),
	};

	if (argc != 3) {
		fprintf(stderr, "usage: %s DIR INL_GZ\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	inl_gz = argv[2];
	hwm_start = vm_hwm_kib();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
