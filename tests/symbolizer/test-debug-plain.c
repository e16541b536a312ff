// SPDX-License-Identifier: Apache-2.0
/* Debug files kept decompressed (symbolizer/debug_plain.c): the copy of a file with compressed
 * .debug_* sections is made once, read back after, has no compressed section left and symbolizes
 * as the original does; a file with nothing to decompress, a bad name or an untrusted directory
 * leave nothing behind; the directory's file bound removes the oldest copy. argv[1]: a program
 * built with -gz, argv[2]: the same without. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug_plain.h"
#include "elf_module.h"
#include "elf_symbol.h"

#define ID "00112233445566778899aabbccddeeff00112233"

static const char *gz_program, *plain_program;
static char dir[256];

static int setup(void **state)
{
	char tmpl[] = "/tmp/test-debug-plain-XXXXXX";

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	snprintf(dir, sizeof(dir), "%s/debug", tmpl);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%.*s'", (int)(strrchr(dir, '/') - dir), dir);
	return system(cmd) == 0 ? 0 : -1;
}

static size_t count_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static size_t compressed_sections(int fd)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t n = 0;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;

		assert_non_null(gelf_getshdr(scn, &shdr));
		n += (shdr.sh_flags & SHF_COMPRESSED) != 0;
	}
	elf_end(elf);
	return n;
}

static int open_plain(const char *path, const char *id, enum debug_plain_result *result, uint64_t *evicted)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), copy;

	assert_true(fd >= 0);
	copy = debug_plain_open(dir, fd, id, 1, 0, result, evicted);
	close(fd);
	return copy;
}

/* leaf's name and line through the module opened on fd. */
static void leaf_of(int fd, uint64_t at, char *function, uint32_t *line)
{
	struct elf_module *m = elf_module_open(fd, &(struct elf_module_options){ .root_fd = -1 });
	struct sym_frame frame = { 0 };

	assert_non_null(m);
	assert_true(elf_module_symbolize(m, at, &frame) > 0);
	snprintf(function, 64, "%s", frame.lines[0].function);
	*line = frame.lines[0].line;
	elf_module_free(m);
}

static void test_made_once_then_read(void **state)
{
	enum debug_plain_result result;
	uint64_t evicted = 0, at = symbol_vaddr(gz_program, "leaf") + 1;
	char name[PATH_MAX], f1[64], f2[64];
	uint32_t l1, l2;
	struct stat st;
	int copy, fd;

	(void)state;
	copy = open_plain(gz_program, ID, &result, &evicted);
	assert_int_equal(result, DEBUG_PLAIN_WRITTEN);
	assert_true(copy >= 0);
	assert_true(compressed_sections(copy) == 0);
	snprintf(name, sizeof(name), "%s/%s.debug", dir, ID);
	assert_int_equal(stat(name, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	/* The same function and line as the compressed original. */
	fd = open(gz_program, O_RDONLY | O_CLOEXEC);
	assert_true(compressed_sections(fd) > 0);
	leaf_of(fd, at, f1, &l1);
	leaf_of(copy, at, f2, &l2);
	assert_string_equal(f1, "leaf");
	assert_string_equal(f1, f2);
	assert_true(l1 > 0);
	assert_int_equal(l1, l2);

	copy = open_plain(gz_program, ID, &result, &evicted);
	assert_int_equal(result, DEBUG_PLAIN_READ);
	assert_true(copy >= 0);
	close(copy);
	assert_int_equal(count_files(), 1);
	assert_int_equal(evicted, 0);
	/* Under the threshold: nothing done. */
	fd = open(gz_program, O_RDONLY | O_CLOEXEC);
	assert_int_equal(debug_plain_open(dir, fd, ID, 10, 11, &result, &evicted), -1);
	assert_int_equal(result, DEBUG_PLAIN_NONE);
	close(fd);
}

static void test_nothing_left_behind(void **state)
{
	enum debug_plain_result result;
	uint64_t evicted = 0;
	size_t before = count_files();
	DIR *d;
	struct dirent *e;

	(void)state;
	/* Nothing compressed: no copy, no temporary file. */
	assert_int_equal(open_plain(plain_program, "aa" ID, &result, &evicted), -1);
	assert_int_equal(result, DEBUG_PLAIN_FAILED);
	/* Not a build id: never a path. */
	assert_int_equal(open_plain(gz_program, "../x", &result, &evicted), -1);
	assert_int_equal(result, DEBUG_PLAIN_NONE);
	assert_int_equal(open_plain(gz_program, "AB", &result, &evicted), -1);
	assert_int_equal(result, DEBUG_PLAIN_NONE);
	assert_int_equal(count_files(), before);
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d)))
		assert_false(e->d_name[0] == '.' && e->d_name[1] && e->d_name[1] != '.');
	closedir(d);
}

/* A directory others may write: its copies are neither read nor made. */
static void test_untrusted_directory(void **state)
{
	enum debug_plain_result result;
	uint64_t evicted = 0;
	size_t before = count_files();

	(void)state;
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(open_plain(gz_program, ID, &result, &evicted), -1);
	assert_int_equal(result, DEBUG_PLAIN_FAILED);
	assert_int_equal(open_plain(gz_program, "dd" ID, &result, &evicted), -1);
	assert_int_equal(result, DEBUG_PLAIN_FAILED);
	assert_int_equal(chmod(dir, 0700), 0);
	assert_int_equal(count_files(), before);
}

static void test_bound_removes_oldest(void **state)
{
	enum debug_plain_result result;
	uint64_t evicted = 0;
	char name[PATH_MAX];
	int copy;

	(void)state;
	/* Fill the directory to its file bound with old files, the first the oldest. */
	for (int i = (int)count_files(); i < DEBUG_PLAIN_MAX_FILES; i++) {
		struct timespec times[2] = { { .tv_sec = 1000 + i }, { .tv_sec = 1000 + i } };
		int fd;

		snprintf(name, sizeof(name), "%s/%040x.debug", dir, i);
		fd = open(name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		assert_int_equal(futimens(fd, times), 0);
		close(fd);
	}
	assert_int_equal(count_files(), DEBUG_PLAIN_MAX_FILES);
	copy = open_plain(gz_program, "cc" ID, &result, &evicted);
	assert_int_equal(result, DEBUG_PLAIN_WRITTEN);
	close(copy);
	assert_int_equal(evicted, 1);
	assert_int_equal(count_files(), DEBUG_PLAIN_MAX_FILES);
	snprintf(name, sizeof(name), "%s/%040x.debug", dir, 1);
	assert_int_equal(access(name, F_OK), -1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_made_once_then_read),
		cmocka_unit_test(test_nothing_left_behind),
		cmocka_unit_test(test_untrusted_directory),
		cmocka_unit_test(test_bound_removes_oldest),
	};

	if (argc < 3) {
		fprintf(stderr, "usage: %s PROGRAM_GZ PROGRAM\n", argv[0]);
		return 2;
	}
	gz_program = argv[1];
	plain_program = argv[2];
	return cmocka_run_group_tests(tests, setup, teardown);
}
