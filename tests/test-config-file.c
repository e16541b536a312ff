// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/config_file.h"

static int parse(const char *text, struct config_file **c, char *err)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int r = config_file_parse(f, "test.conf", c, err, 256);

	fclose(f);
	return r;
}

static void test_good(void **state)
{
	struct config_file *c;
	char err[256];

	assert_int_equal(parse("# a comment\n\n  frequency = 99\nexport_interval=30s  # why\n"
			       "headers = \"a=b, c=d \\\"q\\\" \"\nfollow-children = yes\nempty =\n", &c, err), 0);
	assert_int_equal(c->nentries, 5);
	assert_string_equal(c->entries[0].key, "frequency");
	assert_string_equal(c->entries[0].value, "99");
	assert_int_equal(c->entries[0].line, 3);
	assert_string_equal(c->entries[1].key, "export-interval");
	assert_string_equal(c->entries[1].value, "30s");
	assert_string_equal(c->entries[2].value, "a=b, c=d \"q\" ");
	assert_string_equal(c->entries[3].value, "yes");
	assert_string_equal(c->entries[4].value, "");
	config_file_free(c);
	config_file_free(NULL);
}

static void test_errors(void **state)
{
	static const struct {
		const char *text, *message;
	} bad[] = {
		{ "frequency 99\n", "test.conf:1: expected 'key = value'" },
		{ "\n\nFrequency = 1\n", "test.conf:3: 'Frequency' is not a valid key" },
		{ "= 1\n", "test.conf:1: '' is not a valid key" },
		{ "headers = \"open\n", "test.conf:1: unbalanced quotes in the value of 'headers'" },
		{ "headers = \"a\" b\n", "test.conf:1: unbalanced quotes in the value of 'headers'" },
		/* A line of another format may hold a secret before its '=': not shown. */
		{ "Authorization: Basic c2VjcmV0==\n", "test.conf:1: not a valid key (keys are option names: a-z, 0-9, '-')" },
		{ "fre\x1bquency = 1\n", "test.conf:1: 'fre\\x1bquency' is not a valid key" },
		/* A byte order mark only at the start of the file. */
		{ "frequency = 1\n\xef\xbb\xbfkey = 1\n", "test.conf:2: '\xef\xbb\xbfkey' is not a valid key" },
	};
	struct config_file *c = NULL;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i].text, &c, err), -EINVAL);
		assert_string_equal(err, bad[i].message);
	}
}

static void test_byte_order_mark(void **state)
{
	struct config_file *c;
	char err[256];

	assert_int_equal(parse("\xef\xbb\xbf# a comment\nfrequency = 99\n", &c, err), 0);
	assert_int_equal(c->nentries, 1);
	config_file_free(c);
	assert_int_equal(parse("\xef\xbb\xbf" "frequency = 99\n", &c, err), 0);
	assert_string_equal(c->entries[0].key, "frequency");
	config_file_free(c);
}

/* Only regular files (through symlinks), and a FIFO nobody writes to must not hang the open. */
static void test_file_types(void **state)
{
	char dir[] = "/tmp/test-config-file-XXXXXX", path[128], link[128], err[256];
	struct config_file *c;
	struct timespec t0, t1;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(config_file_load(path, &c, err, sizeof(err)), -EINVAL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 2);
	assert_non_null(strstr(err, "not a regular file"));
	unlink(path);

	assert_int_equal(config_file_load("/dev/null", &c, err, sizeof(err)), -EINVAL);
	snprintf(path, sizeof(path), "%s/real.conf", dir);
	snprintf(link, sizeof(link), "%s/link.conf", dir);
	f = fopen(path, "w");
	fputs("frequency = 99\n", f);
	fclose(f);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(config_file_load(link, &c, err, sizeof(err)), 0);
	assert_string_equal(c->entries[0].value, "99");
	config_file_free(c);
	unlink(link);
	unlink(path);
	rmdir(dir);
}

static void test_bounds(void **state)
{
	struct config_file *c;
	char err[256], *text = malloc(CONFIG_MAX_LINE + 64);

	memset(text, 'a', CONFIG_MAX_LINE + 10);
	memcpy(text, "key = ", 6);
	text[CONFIG_MAX_LINE + 10] = 0;
	assert_int_equal(parse(text, &c, err), -EINVAL);
	assert_non_null(strstr(err, "line longer than"));
	free(text);

	text = malloc(CONFIG_MAX_ENTRIES * 8 + 64);
	text[0] = 0;
	for (int i = 0; i <= CONFIG_MAX_ENTRIES; i++)
		strcat(text, "k = 1\n");
	assert_int_equal(parse(text, &c, err), -EFBIG);
	free(text);

	{
		static const char nul[] = "frequency = 9\0\n";
		FILE *f = fmemopen((void *)nul, sizeof(nul) - 1, "r");

		assert_int_equal(config_file_parse(f, "test.conf", &c, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, "test.conf:1: NUL byte in the line");
		fclose(f);
	}
	assert_int_equal(config_file_load("/nonexistent/otelprofd.conf", &c, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "/nonexistent/otelprofd.conf: No such file or directory");
	assert_int_equal(config_file_load("/proc", &c, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_byte_order_mark),
		cmocka_unit_test(test_file_types),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
