// SPDX-License-Identifier: Apache-2.0
/* elf_module and symbolizer on this test binary itself, and on broken copies of it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_module.h"
#include "symbolizer.h"

static unsigned marker_line;
int marker_function(int x);

__attribute__((noinline)) int marker_function(int x)
{
	marker_line = __LINE__ - 2;
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static void test_self(void **state)
{
	struct symbolizer *s = symbolizer_new(NULL);
	struct sym_frame f;
	const char *file;

	assert_int_equal(marker_function(1), 2);
	assert_int_equal(symbolizer_user(s, getpid(), (uint64_t)(uintptr_t)&marker_function, &f), 0);
	assert_true(f.has_mapping);
	assert_non_null(f.mapping.build_id);
	assert_non_null(f.mapping.htlhash);
	assert_int_equal(strlen(f.mapping.htlhash), 32);
	assert_true(f.nlines >= 1);
	assert_string_equal(f.lines[f.nlines - 1].function, "marker_function");
	file = f.lines[0].file;
	assert_non_null(file);
	assert_non_null(strstr(file, "test-elf-module.c"));
	/* The entry address belongs to the definition or its first statement. */
	assert_in_range(f.lines[0].line, marker_line, marker_line + 3);
	/* The second lookup of the same address comes from the caches. */
	assert_int_equal(symbolizer_user(s, getpid(), (uint64_t)(uintptr_t)&marker_function, &f), 0);
	assert_string_equal(f.lines[f.nlines - 1].function, "marker_function");
	assert_int_equal(symbolizer_stats(s)->module_cache_misses, 1);
	symbolizer_free(s);
}

static unsigned char *read_self(size_t *size)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	struct stat st;
	unsigned char *data;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	data = malloc((size_t)st.st_size);
	assert_int_equal(read(fd, data, (size_t)st.st_size), st.st_size);
	close(fd);
	*size = (size_t)st.st_size;
	return data;
}

static int memfd_with(const unsigned char *data, size_t size)
{
	int fd = memfd_create("elf", 0);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, size), (ssize_t)size);
	return fd;
}

/* Open and query; whatever the bytes, this must return. */
static void poke(const unsigned char *data, size_t size)
{
	struct elf_module *m = elf_module_open(memfd_with(data, size), NULL);
	struct sym_frame f;

	if (!m)
		return;
	for (uint64_t off = 0; off < size; off += size / 7 + 1) {
		uint64_t vaddr;

		if (elf_module_offset_to_vaddr(m, off, &vaddr))
			elf_module_symbolize(m, vaddr, &f);
	}
	elf_module_symbolize(m, 0, &f);
	elf_module_symbolize(m, UINT64_MAX, &f);
	elf_module_free(m);
}

static void test_not_elf(void **state)
{
	static const unsigned char junk[] = "\x7f" "ELF this is not an ELF file at all";
	int p[2];

	assert_null(elf_module_open(memfd_with(junk, 0), NULL));
	assert_null(elf_module_open(memfd_with(junk, sizeof(junk)), NULL));
	assert_int_equal(pipe(p), 0);
	close(p[1]);
	assert_null(elf_module_open(p[0], NULL)); /* a FIFO: refused, not read */
	assert_int_equal(errno, EINVAL);
}

static void test_truncated(void **state)
{
	size_t size;
	unsigned char *data = read_self(&size);

	for (size_t n = 0; n < size; n += size / 23 + 1)
		poke(data, n);
	poke(data, 64);
	poke(data, size - 1);
	free(data);
}

static void test_corrupt(void **state)
{
	size_t size;
	unsigned char *data = read_self(&size), *copy = malloc(size);
	uint64_t x = 0x243f6a8885a308d3ULL;

	for (int round = 0; round < 24; round++) {
		memcpy(copy, data, size);
		/* Flip bytes in the headers and at random places in the file. */
		for (int i = 0; i < 64; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			size_t at = (i < 16 ? x % 256 : x % size);

			copy[at] ^= (unsigned char)(x >> 32);
		}
		poke(copy, size);
	}
	free(copy);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
