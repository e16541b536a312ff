// SPDX-License-Identifier: Apache-2.0
/*
 * dwarf_lines against libdw: for every compile unit of each binary named on the command line
 * (DWARF 2, 4 and 5 from gcc and clang, compressed sections) and for every row address of the
 * unit's line table (and the byte after it), our reader gives the same file, line and column as
 * dwarf_getsrc_die, and the same path for every file number as dwarf_filesrc. Then hostile
 * headers: truncated and corrupted copies of a line program are refused or answered within bounds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dwarf_lines.h"

static int g_argc;
static char **g_argv;

struct tally {
	unsigned units, rows, mismatches, unsupported;
};

static void compare_unit(Dwarf_Die *cu, struct dwarf_lines *l, struct tally *t)
{
	Dwarf_Lines *lines;
	Dwarf_Files *files;
	size_t nlines, nfiles;
	char path[4096];

	if (dwarf_getsrclines(cu, &lines, &nlines) || dwarf_getsrcfiles(cu, &files, &nfiles))
		return;
	for (size_t i = 1; i < nfiles; i++) {
		const char *want = dwarf_filesrc(files, i, NULL, NULL);

		if (want && (!dwarf_lines_file(l, i, path, sizeof(path)) || strcmp(want, path))) {
			t->mismatches++;
			print_message("file %zu: libdw %s, ours %s\n", i, want, path);
		}
	}
	for (size_t i = 0; i < nlines; i++) {
		Dwarf_Line *row = dwarf_onesrcline(lines, i);
		Dwarf_Addr addr;

		if (!row || dwarf_lineaddr(row, &addr))
			continue;
		for (Dwarf_Addr pc = addr; pc <= addr + 1; pc++) {
			Dwarf_Line *want = dwarf_getsrc_die(cu, pc);
			struct dwarf_line_row got;
			int r = dwarf_lines_find(l, pc, &got);
			int line = 0, col = 0;

			t->rows++;
			if (!want) {
				if (r != -ENOENT) {
					t->mismatches++;
					print_message("pc %#lx: libdw none, ours line %u\n", (unsigned long)pc, got.line);
				}
				continue;
			}
			dwarf_lineno(want, &line);
			dwarf_linecol(want, &col);
			if (r != 0 || got.line != (unsigned)line || got.column != (unsigned)col ||
			    !dwarf_lines_file(l, got.file, path, sizeof(path)) ||
			    strcmp(path, dwarf_linesrc(want, NULL, NULL))) {
				t->mismatches++;
				if (t->mismatches < 10)
					print_message("pc %#lx: libdw %s:%d:%d, ours r=%d %u:%u\n", (unsigned long)pc,
						      dwarf_linesrc(want, NULL, NULL), line, col, r, got.line, got.column);
			}
		}
	}
}

static void compare_file(const char *path, struct tally *t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Dwarf *dwarf;
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Die cudie;
	uint8_t unit_type;
	Dwarf_Half version;

	assert_true(fd >= 0);
	dwarf = dwarf_begin(fd, DWARF_C_READ);
	assert_non_null(dwarf);
	while (dwarf_get_units(dwarf, cu, &next, &version, &unit_type, &cudie, NULL) == 0) {
		struct dwarf_lines *l;

		cu = next;
		if (unit_type != DW_UT_compile)
			continue;
		l = dwarf_lines_open(dwarf, &cudie);
		if (!l) {
			if (errno != ENOENT)
				t->unsupported++;
			continue;
		}
		t->units++;
		compare_unit(&cudie, l, t);
		dwarf_lines_free(l);
	}
	dwarf_end(dwarf);
	close(fd);
}

static void test_same_as_libdw(void **state)
{
	for (int i = 1; i < g_argc; i++) {
		struct tally t = { 0 };

		compare_file(g_argv[i], &t);
		print_message("%s: %u units, %u addresses, %u mismatches, %u unsupported\n", g_argv[i], t.units,
			      t.rows, t.mismatches, t.unsupported);
		assert_true(t.units > 0);
		assert_true(t.rows > 0);
		assert_int_equal(t.mismatches, 0);
		assert_int_equal(t.unsupported, 0);
	}
}

/* Copies of the first binary with its .debug_line cut short or overwritten: never a crash, and
 * every answer stays a row of the table or an error (checked by ASan/UBSan in the asan build). */
static void test_hostile(void **state)
{
	int fd = open(g_argv[1], O_RDONLY | O_CLOEXEC);
	off_t size = lseek(fd, 0, SEEK_END);
	unsigned char *data = malloc((size_t)size);
	char tmp[] = "/tmp/otelprof-lines-XXXXXX";
	int out = mkstemp(tmp);
	unsigned opened = 0;

	assert_true(fd >= 0 && out >= 0 && data);
	assert_int_equal(pread(fd, data, (size_t)size, 0), size);
	close(fd);
	unlink(tmp);
	for (unsigned round = 0; round < 200; round++) {
		unsigned char *copy = malloc((size_t)size);
		Dwarf *dwarf;
		Dwarf_Die cudie;
		Dwarf_CU *cu = NULL, *next;
		uint8_t unit_type;
		Dwarf_Half version;

		memcpy(copy, data, (size_t)size);
		/* Flip bytes in the second half of the file, where the DWARF sections live. */
		srand(round);
		for (unsigned k = 0; k < 1 + round % 16; k++)
			copy[(size_t)size / 2 + (size_t)rand() % ((size_t)size / 2)] ^= (unsigned char)(1 + rand() % 255);
		assert_int_equal(pwrite(out, copy, (size_t)size, 0), size);
		free(copy);
		dwarf = dwarf_begin(out, DWARF_C_READ);
		while (dwarf && dwarf_get_units(dwarf, cu, &next, &version, &unit_type, &cudie, NULL) == 0) {
			struct dwarf_lines *l = dwarf_lines_open(dwarf, &cudie);
			struct dwarf_line_row row;
			char path[256];

			cu = next;
			if (!l)
				continue;
			opened++;
			for (uint64_t pc = 0; pc < 0x4000; pc += 0x101)
				if (dwarf_lines_find(l, pc, &row) == 0)
					dwarf_lines_file(l, row.file, path, sizeof(path));
			for (uint64_t i = 0; i < 8; i++)
				dwarf_lines_file(l, i, path, sizeof(path));
			dwarf_lines_free(l);
		}
		dwarf_end(dwarf);
	}
	assert_true(opened > 0);
	close(out);
	free(data);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_libdw),
		cmocka_unit_test(test_hostile),
	};

	g_argc = argc;
	g_argv = argv;
	if (argc < 2) {
		fprintf(stderr, "usage: %s BINARY...\n", argv[0]);
		return 2;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
