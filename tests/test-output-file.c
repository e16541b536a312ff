// SPDX-License-Identifier: Apache-2.0
/*
 * Output files: in place whole after a commit, absent after an abort or a failure, no temporary file
 * left either way, and a symbolic link at the final name replaced, never followed. (A full disk is
 * tested for real, on a tiny tmpfs, by the integration test output-file.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/output_file.h"

static char dir[] = "/tmp/test-output-fileXXXXXX";

/* Entries of the test directory, . and .. aside. */
static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, size - 1, f);
	buf[n] = 0;
	fclose(f);
}

/* text written to path through an output file: the commit's result. */
static int commit_text(const char *path, const char *text)
{
	struct output_file *f = output_file_open(path);

	assert_non_null(f);
	fputs(text, output_file_stream(f));
	return output_file_commit(f);
}

/* The file at path holds exactly text. */
static void assert_contents(const char *path, const char *text)
{
	char buf[64];

	read_file(path, buf, sizeof(buf));
	assert_string_equal(buf, text);
}

static void test_commit(void **state)
{
	char path[256];
	struct output_file *f;
	struct stat st;
	mode_t old = umask(022);

	(void)state;
	snprintf(path, sizeof(path), "%s/a.folded", dir);
	f = output_file_open(path);
	assert_non_null(f);
	assert_int_equal(entries(), 1); /* the temporary, not yet the final name */
	assert_int_equal(access(path, F_OK), -1);
	fprintf(output_file_stream(f), "main;f 3\n");
	assert_int_equal(output_file_commit(f), 0);
	assert_contents(path, "main;f 3\n");
	assert_int_equal(entries(), 1);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);

	/* Replaced whole by the next one, and the umask is honoured. */
	umask(077);
	assert_int_equal(commit_text(path, "main;g 1\n"), 0);
	assert_contents(path, "main;g 1\n");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	umask(old);
	unlink(path);
}

static void test_abort(void **state)
{
	char path[256];
	struct output_file *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/b.folded", dir);
	f = output_file_open(path);
	fprintf(output_file_stream(f), "half a li");
	output_file_abort(f);
	assert_int_equal(entries(), 0);

	/* An earlier profile stays as it was. */
	assert_int_equal(commit_text(path, "old 1\n"), 0);
	f = output_file_open(path);
	fprintf(output_file_stream(f), "new");
	output_file_abort(f);
	assert_contents(path, "old 1\n");
	assert_int_equal(entries(), 1);
	unlink(path);
	output_file_abort(NULL);
}

/* A link planted at the final name: its target keeps its contents, the link becomes the profile. */
static void test_symlink_replaced(void **state)
{
	char path[256], target[256];
	struct stat st;
	FILE *t;

	(void)state;
	snprintf(path, sizeof(path), "%s/c.folded", dir);
	snprintf(target, sizeof(target), "%s/victim", dir);
	t = fopen(target, "we");
	fputs("precious\n", t);
	fclose(t);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(commit_text(path, "main 1\n"), 0);
	assert_contents(target, "precious\n");
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_contents(path, "main 1\n");
	unlink(path);
	unlink(target);
}

/* Failures leave nothing: a directory in the way of the rename, a directory that does not exist. */
static void test_failures(void **state)
{
	char path[256];

	(void)state;
	snprintf(path, sizeof(path), "%s/d.folded", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(commit_text(path, "main 1\n"), -EISDIR);
	assert_int_equal(entries(), 1);
	rmdir(path);

	snprintf(path, sizeof(path), "%s/missing/e.folded", dir);
	errno = 0;
	assert_null(output_file_open(path));
	assert_int_equal(errno, ENOENT);
	assert_int_equal(entries(), 0);
}

/* The check before a run: a directory at the name, a missing directory, and a good path (nothing left). */
static void test_check(void **state)
{
	char path[256];

	(void)state;
	snprintf(path, sizeof(path), "%s/f.folded", dir);
	assert_int_equal(output_file_check(path), 0);
	assert_int_equal(entries(), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(output_file_check(path), -EISDIR);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/missing/f.folded", dir);
	assert_int_equal(output_file_check(path), -ENOENT);
	if (geteuid()) { /* root writes anywhere */
		assert_int_equal(chmod(dir, 0555), 0);
		snprintf(path, sizeof(path), "%s/f.folded", dir);
		assert_int_equal(output_file_check(path), -EACCES);
		chmod(dir, 0700);
	}
	assert_int_equal(entries(), 0);
}

/* A device or a FIFO at the name is written in place, never renamed over: /dev/null stays the
 * device (as root, a rename would have replaced it), a FIFO gets the contents and stays a FIFO, and
 * one without a reader is ENXIO at open rather than a wait (the check before a run still passes). */
static void test_special(void **state)
{
	char path[256], buf[64];
	struct stat st;
	ssize_t n;
	int reader;

	(void)state;
	assert_int_equal(output_file_check("/dev/null"), 0);
	assert_int_equal(commit_text("/dev/null", "main 1\n"), 0);
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));

	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(output_file_check(path), 0);
	errno = 0;
	assert_null(output_file_open(path));
	assert_int_equal(errno, ENXIO);
	reader = open(path, O_RDONLY | O_NONBLOCK);
	assert_true(reader >= 0);
	assert_int_equal(commit_text(path, "main;g 2\n"), 0);
	n = read(reader, buf, sizeof(buf) - 1);
	assert_int_equal(n, 9);
	buf[n] = 0;
	assert_string_equal(buf, "main;g 2\n");
	close(reader);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	unlink(path);
	assert_int_equal(entries(), 0);
}

/* A fallback file: new each time, this user's alone, named after the path with its extension. */
static void test_fallback(void **state)
{
	char a[256], b[256];
	struct stat st;
	size_t n;

	(void)state;
	assert_int_equal(output_file_fallback(dir, "/gone/dir/app.pb.gz", a, sizeof(a)), 0);
	assert_int_equal(output_file_fallback(dir, "app.pb.gz", b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	n = strlen(dir);
	assert_memory_equal(a, dir, n);
	assert_memory_equal(a + n, "/otelprofd-", 11);
	assert_string_equal(a + n + 11 + 6, "-app.pb.gz");
	assert_int_equal(lstat(a, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_uid, geteuid());
	/* A profile written there replaces it (output files rename over their final name). */
	assert_int_equal(commit_text(a, "main 1\n"), 0);
	assert_contents(a, "main 1\n");
	unlink(a);
	unlink(b);
	assert_int_equal(output_file_fallback("/nonexistent-dir", "x.folded", a, sizeof(a)), -ENOENT);
	assert_int_equal(output_file_fallback(dir, "x.folded", a, 16), -ENAMETOOLONG);
	assert_int_equal(output_file_fallback(dir, "dir/", a, sizeof(a)), -EINVAL);
	assert_int_equal(entries(), 0);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commit),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_symlink_replaced),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_special),
		cmocka_unit_test(test_fallback),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
