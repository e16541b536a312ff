// SPDX-License-Identifier: Apache-2.0
/* dl_lib_present(): a library found without loading it (what lets the gRPC exporter wait for its
 * first request), and what it does not count as found. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dl_lib.h"

static void no_entry_points(struct dl_lib *lib)
{
	(void)lib;
}

static struct dl_lib lib_named(const char *soname)
{
	return (struct dl_lib)DL_LIB_INIT(soname, "test-package", no_entry_points);
}

/* Copy of the C library (an ELF shared object of this machine) at path. */
static void copy_libc(const char *path)
{
	Dl_info info;
	char buf[65536];
	ssize_t n;
	int in, out;

	assert_true(dladdr((void *)&gnu_get_libc_version, &info) && info.dli_fname);
	in = open(info.dli_fname, O_RDONLY);
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

static void test_system_library(void **state)
{
	struct dl_lib libc = lib_named("libc.so.6"), libm = lib_named("libm.so.6");

	(void)state;
	assert_true(dl_lib_present(&libc));
	assert_true(dl_lib_present(&libm));
	assert_false(dl_lib_loaded(&libm));
}

static void test_missing_library(void **state)
{
	struct dl_lib lib = lib_named("libotelprofd-test-none.so.7");

	(void)state;
	assert_false(dl_lib_present(&lib));
}

/* $LD_LIBRARY_PATH is searched, an ELF shared object counts, anything else does not, and nothing
 * is loaded. */
static void test_library_path(void **state)
{
	char dir[] = "/tmp/dl-lib-XXXXXX", path[128], env[256];
	struct dl_lib lib = lib_named("libotelprofd-test-fake.so.1");
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, lib.soname);
	snprintf(env, sizeof(env), "/nonexistent::%s", dir);
	assert_int_equal(setenv("LD_LIBRARY_PATH", env, 1), 0);
	assert_false(dl_lib_present(&lib));

	f = fopen(path, "w");
	assert_non_null(f);
	fputs("not an ELF file, but long enough to hold a header of one: ..............................", f);
	fclose(f);
	assert_false(dl_lib_present(&lib));
	assert_int_equal(truncate(path, 0), 0);
	assert_false(dl_lib_present(&lib));

	copy_libc(path);
	assert_true(dl_lib_present(&lib));
	assert_null(dlopen(lib.soname, RTLD_NOW | RTLD_NOLOAD));
	unsetenv("LD_LIBRARY_PATH");
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_system_library),
		cmocka_unit_test(test_missing_library),
		cmocka_unit_test(test_library_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
