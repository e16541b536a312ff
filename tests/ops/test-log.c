// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* stderr goes to a scratch file for each test; the test reads back what was logged. */
static char path[] = "/tmp/test-log-XXXXXX";
static int saved_stderr = -1;

static int setup(void **state)
{
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	fflush(stderr);
	saved_stderr = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
	log_set_level(LOG_LEVEL_DEBUG);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	unlink(path);
	strcpy(path, "/tmp/test-log-XXXXXX");
	unsetenv("JOURNAL_STREAM");
	log_detect_journal();
	return 0;
}

static char *logged(void)
{
	static char buf[4096];
	FILE *f;
	size_t n;

	fflush(stderr);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* JOURNAL_STREAM as systemd sets it: stderr's "DEVICE:INODE". */
static void set_journal_stream_to_stderr(const char *suffix)
{
	struct stat st;
	char value[64];

	assert_int_equal(fstat(STDERR_FILENO, &st), 0);
	snprintf(value, sizeof(value), "%llu:%llu%s", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		 suffix);
	setenv("JOURNAL_STREAM", value, 1);
	log_detect_journal();
}

static void log_every_level(void)
{
	log_error("disk %s", "full");
	log_warn("slow");
	log_info("started");
	log_debug("detail %d", 7);
}

static void test_journal_prefixes(void **state)
{
	(void)state;
	set_journal_stream_to_stderr("");
	assert_true(log_stderr_is_journal());
	log_every_level();
	assert_string_equal(logged(), "<3>error: disk full\n<4>warning: slow\n<6>started\n<7>debug: detail 7\n");
}

static void test_plain_stderr_unchanged(void **state)
{
	(void)state;
	log_detect_journal();
	assert_false(log_stderr_is_journal());
	log_every_level();
	assert_string_equal(logged(), "otelprofd: error: disk full\notelprofd: warning: slow\notelprofd: started\n"
				      "otelprofd: debug: detail 7\n");
}

/* A JOURNAL_STREAM inherited from a service, stderr redirected elsewhere since: not the journal. */
static void test_other_file_is_not_journal(void **state)
{
	(void)state;
	setenv("JOURNAL_STREAM", "1:1", 1);
	log_detect_journal();
	assert_false(log_stderr_is_journal());
	set_journal_stream_to_stderr("x");
	assert_false(log_stderr_is_journal());
	setenv("JOURNAL_STREAM", "garbage", 1);
	assert_false(log_stderr_is_journal());
	setenv("JOURNAL_STREAM", "", 1);
	assert_false(log_stderr_is_journal());
	log_warn("slow");
	assert_string_equal(logged(), "otelprofd: warning: slow\n");
}

static void test_log_lines(void **state)
{
	(void)state;
	set_journal_stream_to_stderr("");
	log_lines(LOG_LEVEL_DEBUG, "libbpf", "one\n\ntwo\nthree");
	assert_string_equal(logged(), "<7>debug: libbpf: one\n<7>debug: libbpf: two\n<7>debug: libbpf: three\n");
}

static void test_level_filter(void **state)
{
	(void)state;
	set_journal_stream_to_stderr("");
	log_set_level(LOG_LEVEL_WARN);
	log_every_level();
	log_set_level(LOG_LEVEL_DEBUG);
	assert_string_equal(logged(), "<3>error: disk full\n<4>warning: slow\n");
}

/* Option errors are written to a FILE: under the journal, as error lines without the program name. */
static void test_error_stream(void **state)
{
	FILE *err;

	(void)state;
	err = log_error_stream();
	assert_ptr_equal(err, stderr);
	set_journal_stream_to_stderr("");
	err = log_error_stream();
	assert_ptr_not_equal(err, stderr);
	fprintf(err, "otelprofd: --pid: '%s' is not a process id\n", "x");
	fprintf(err, "second ");
	fprintf(err, "line\n");
	fflush(err);
	assert_string_equal(logged(), "<3>error: --pid: 'x' is not a process id\n<3>error: second line\n");
}

/* Lines of text numbered in order ("otelprofd: line N"), and the lines the notes say are dropped. */
static void count_lines(const char *text, int *lines, uint64_t *noted)
{
	int last = -1;

	*lines = 0;
	*noted = 0;
	for (const char *at = text; (at = strstr(at, "otelprofd: ")); at++) {
		if (!strncmp(at, "otelprofd: line ", 16)) {
			assert_true(atoi(at + 16) > last);
			last = atoi(at + 16);
			++*lines;
		} else if (!strncmp(at, "otelprofd: warning: ", 20) && strstr(at, " log lines dropped")) {
			*noted += strtoull(at + 20, NULL, 10);
		}
	}
}

/* Once the writer runs, a line never waits for stderr: a pipe nobody reads fills, the queue fills,
 * and the lines after are dropped and counted; once the pipe is read the writer catches up and says
 * how many are missing, where they are missing. Last: the writer thread stays. */
static void test_writer_never_waits(void **state)
{
	char buf[65536], *text = NULL;
	size_t len = 0;
	int fds[2], lines = 0;
	uint64_t noted = 0;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	fcntl(fds[1], F_SETPIPE_SZ, 4096);
	dup2(fds[1], STDERR_FILENO);
	close(fds[1]);
	log_set_level(LOG_LEVEL_INFO);
	assert_int_equal(log_start_writer(NULL, 4096), 0);
	for (int i = 0; i < 2000; i++) /* 200 KiB: would block on the 8th KiB written at once */
		log_info("line %04d %080d", i, 0);
	assert_true(log_lines_dropped() > 1000);
	/* Read until every line is written or said dropped: in order, and as many dropped as counted. */
	while (lines + (int)noted < 2000) {
		ssize_t n = read(fds[0], buf, sizeof(buf));

		assert_true(n > 0);
		text = realloc(text, len + (size_t)n + 1);
		assert_non_null(text);
		memcpy(text + len, buf, (size_t)n);
		len += (size_t)n;
		text[len] = 0;
		count_lines(text, &lines, &noted);
	}
	assert_int_equal(noted, log_lines_dropped());
	assert_int_equal(lines + (int)noted, 2000);
	free(text);
	log_info("after");
	log_drain();
	assert_true(read(fds[0], buf, sizeof(buf) - 1) > 0);
	close(fds[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_journal_prefixes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plain_stderr_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_file_is_not_journal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_level_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_never_waits, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
