// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perf_map.h"

static struct perf_map *parse(const char *text)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct perf_map *m = perf_map_parse(f, PERF_MAP_MAX_FILE_BYTES);

	fclose(f);
	return m;
}

static void test_parse_lookup(void **state)
{
	struct perf_map *m = parse(
		"7f0000001000 40 LazyCompile:~main /app/index.js:1\n"
		"7f0000000100 10 stub\n"
		"not a line\n"
		"7f0000002000 0 zero_size\n"
		"7f0000003000 20\n"
		"ffffffffffffffff 10 wraps\n"
		"7f0000001000 20 recompiled\n");

	assert_non_null(m);
	assert_int_equal(perf_map_count(m), 2);
	assert_int_equal(perf_map_malformed(m), 4);
	assert_string_equal(perf_map_lookup(m, 0x7f0000000105)->name, "stub");
	assert_null(perf_map_lookup(m, 0x7f0000000110));
	/* The later line for the same start wins. */
	assert_string_equal(perf_map_lookup(m, 0x7f0000001010)->name, "recompiled");
	assert_null(perf_map_lookup(m, 0x7f0000001020));
	assert_null(perf_map_lookup(m, 0x10));
	perf_map_free(m);
}

/* HotSpot's perf map (jcmd Compiler.perfmap): methods as Class.method, its other blobs as named. */
static void test_jvm_names(void **state)
{
	struct perf_map *m = parse(
		"1000 10 long Hot.mix(long)\n"
		"2000 10 void java.util.HashMap.resize()\n"
		"3000 10 java.lang.Object[] java.util.Arrays.copyOf(java.lang.Object[], int)\n"
		"4000 10 Interpreter\n"
		"5000 10 StubRoutines (1)\n"
		"6000 10 LazyCompile:~main /app/index.js:1\n"
		"7000 10 void f(int)\n"
		"8000 10 int a.b(c(d))\n");

	assert_non_null(m);
	assert_string_equal(perf_map_lookup(m, 0x1001)->name, "Hot.mix");
	assert_string_equal(perf_map_lookup(m, 0x2001)->name, "java.util.HashMap.resize");
	assert_string_equal(perf_map_lookup(m, 0x3001)->name, "java.util.Arrays.copyOf");
	assert_string_equal(perf_map_lookup(m, 0x4001)->name, "Interpreter");
	assert_string_equal(perf_map_lookup(m, 0x5001)->name, "StubRoutines (1)");
	assert_string_equal(perf_map_lookup(m, 0x6001)->name, "LazyCompile:~main /app/index.js:1");
	/* Not a qualified Java method: kept. */
	assert_string_equal(perf_map_lookup(m, 0x7001)->name, "void f(int)");
	assert_string_equal(perf_map_lookup(m, 0x8001)->name, "int a.b(c(d))");
	perf_map_free(m);
}

static void test_empty(void **state)
{
	struct perf_map *m = parse("");

	assert_non_null(m);
	assert_null(perf_map_lookup(m, 0x1000));
	perf_map_free(m);
	perf_map_free(NULL);
}

static void test_bounds(void **state)
{
	const char *text = "1000 10 a\n2000 10 b\n";
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct perf_map *m;
	char *many;
	size_t n = PERF_MAP_MAX_SYMBOLS + 1;

	/* A stream longer than the bound is refused whole, even mid-line. */
	errno = 0;
	assert_null(perf_map_parse(f, strlen(text) - 3));
	assert_int_equal(errno, EFBIG);
	fclose(f);
	f = fmemopen((void *)text, strlen(text), "r");
	m = perf_map_parse(f, strlen(text));
	fclose(f);
	assert_int_equal(perf_map_count(m), 2);
	assert_true(perf_map_bytes(m) >= 2 * sizeof(struct perf_map_sym) + 4);
	perf_map_free(m);

	/* One symbol more than the bound: refused. */
	many = malloc(n * 6);
	assert_non_null(many);
	for (size_t i = 0; i < n; i++)
		memcpy(many + 6 * i, "1 1 a\n", 6);
	f = fmemopen(many, n * 6, "r");
	errno = 0;
	assert_null(perf_map_parse(f, PERF_MAP_MAX_FILE_BYTES));
	assert_int_equal(errno, EFBIG);
	fclose(f);
	free(many);
}

/* A process root with tmp/ in it, as the symbolizer sees /proc/PID/root. */
struct root {
	char dir[64];
	int fd;
};

static int root_setup(void **state)
{
	struct root *r = calloc(1, sizeof(*r));
	char tmp[96];

	if (!r)
		return -1;
	snprintf(r->dir, sizeof(r->dir), "/tmp/test-perf-map-XXXXXX");
	if (!mkdtemp(r->dir))
		return -1;
	snprintf(tmp, sizeof(tmp), "%s/tmp", r->dir);
	mkdir(tmp, 0755);
	r->fd = open(r->dir, O_PATH | O_DIRECTORY);
	*state = r;
	return r->fd < 0 ? -1 : 0;
}

static int root_teardown(void **state)
{
	struct root *r = *state;
	char cmd[128];

	close(r->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", r->dir);
	if (system(cmd))
		return -1;
	free(r);
	return 0;
}

static void write_file(const struct root *r, const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", r->dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int try_open(const struct root *r, const char *path, uid_t uid)
{
	struct stat st;
	int fd = perf_map_open(r->fd, path, uid, &st);

	if (fd >= 0) {
		assert_true(S_ISREG(st.st_mode));
		close(fd);
		return 0;
	}
	return fd;
}

static void test_open(void **state)
{
	struct root *r = *state;
	char path[160], target[160];
	uid_t me = getuid(), other = me == 0 ? 65534 : me + 1;

	write_file(r, "tmp/perf-1.map", "1000 10 a\n");
	assert_int_equal(try_open(r, "/tmp/perf-1.map", me), 0);
	assert_int_equal(try_open(r, "/tmp/perf-9.map", me), -ENOENT);

	/* Not the process's user: refused (as root, also a root file with a second link). */
	if (me == 0) {
		snprintf(path, sizeof(path), "%s/tmp/perf-1.map", r->dir);
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(try_open(r, "/tmp/perf-1.map", 1000), -EPERM);
		assert_int_equal(chown(path, 0, 0), 0);
		assert_int_equal(try_open(r, "/tmp/perf-1.map", 1000), 0); /* root's, one link */
		snprintf(target, sizeof(target), "%s/tmp/perf-2.map", r->dir);
		assert_int_equal(link(path, target), 0);
		assert_int_equal(try_open(r, "/tmp/perf-2.map", 1000), -EPERM);
	} else {
		assert_int_equal(try_open(r, "/tmp/perf-1.map", other), -EPERM);
	}

	/* A symbolic link as the file, or on the way (even one staying inside the root). */
	write_file(r, "secret", "2000 10 SECRET\n");
	snprintf(path, sizeof(path), "%s/tmp/perf-3.map", r->dir);
	assert_int_equal(symlink("/secret", path), 0);
	assert_int_equal(try_open(r, "/tmp/perf-3.map", me), -ELOOP);
	snprintf(path, sizeof(path), "%s/tmplink", r->dir);
	assert_int_equal(symlink("tmp", path), 0);
	assert_int_equal(try_open(r, "/tmplink/perf-1.map", me), -ELOOP);

	/* A FIFO nobody writes: refused at once, not waited on. */
	snprintf(path, sizeof(path), "%s/tmp/perf-4.map", r->dir);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(try_open(r, "/tmp/perf-4.map", me), -EINVAL);

	/* Over the size bound (sparse: the size alone decides, nothing is read). */
	snprintf(path, sizeof(path), "%s/tmp/perf-5.map", r->dir);
	write_file(r, "tmp/perf-5.map", "");
	assert_int_equal(truncate(path, (off_t)PERF_MAP_MAX_FILE_BYTES + 1), 0);
	assert_int_equal(try_open(r, "/tmp/perf-5.map", me), -EFBIG);
	assert_int_equal(truncate(path, (off_t)PERF_MAP_MAX_FILE_BYTES), 0);
	assert_int_equal(try_open(r, "/tmp/perf-5.map", me), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_lookup),
		cmocka_unit_test(test_jvm_names),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test_setup_teardown(test_open, root_setup, root_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
