// SPDX-License-Identifier: Apache-2.0
/*
 * The symbolizer's per-process mappings: instances of one pid kept apart (a reused pid, an exec),
 * retired instances never read from /proc again, the bound on kept processes (a full table evicts
 * the least recently used retired instance, or refuses and counts when none is retired).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc_stat.h"
#include "symbolizer.h"

int marker_function(int x);

__attribute__((noinline)) int marker_function(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static const uint64_t marker = (uint64_t)(uintptr_t)&marker_function;

static int lookup(struct symbolizer *s, uint64_t instance, uint64_t address, struct sym_frame *f)
{
	return symbolizer_user_instance(s, getpid(), instance, address, f);
}

/* Max 4 processes: a fifth live one is refused and counted; once some are retired, it evicts one. */
static void test_bound(void **state)
{
	struct symbolizer *s = symbolizer_new(&(struct symbolizer_config){ .max_processes = 4, .no_debuginfod = true });
	struct sym_frame f;

	(void)state;
	for (uint64_t i = 1; i <= 4; i++)
		assert_int_equal(symbolizer_prepare_instance(s, getpid(), i, 0), 0);
	assert_int_equal(symbolizer_prepare_instance(s, getpid(), 5, 0), -ENOSPC);
	assert_int_equal(symbolizer_stats(s)->process_table_full, 1);
	/* Never prepared: no mappings, and /proc is not read for it at lookup time. */
	assert_int_equal(lookup(s, 5, marker, &f), -ESRCH);
	assert_int_equal(symbolizer_stats(s)->instance_unknown, 1);

	assert_int_equal(lookup(s, 1, marker, &f), 0);
	assert_true(f.nlines >= 1);
	assert_int_equal(lookup(s, 3, marker, &f), 0);
	assert_int_equal(lookup(s, 4, marker, &f), 0);
	/* The pid ended: its instances stay for their samples but can make room. */
	symbolizer_retire_process(s, getpid());
	assert_int_equal(symbolizer_prepare_instance(s, getpid(), 5, 0), 0);
	assert_int_equal(symbolizer_stats(s)->processes_evicted, 1);
	/* The least recently used one (2) went; the others still symbolize. */
	assert_int_equal(lookup(s, 2, marker, &f), -ESRCH);
	assert_int_equal(lookup(s, 1, marker, &f), 0);
	assert_string_equal(f.lines[f.nlines - 1].function, "marker_function");
	assert_int_equal(lookup(s, 5, marker, &f), 0);
	assert_string_equal(f.lines[f.nlines - 1].function, "marker_function");
	symbolizer_forget_instance(s, getpid(), 1);
	assert_int_equal(lookup(s, 1, marker, &f), -ESRCH);
	symbolizer_free(s);
}

/*
 * A mapping made after an instance was retired belongs to whatever the pid runs now: the retired
 * instance does not see it (its maps are not read again), the live one does.
 */
static void test_retired_not_reread(void **state)
{
	struct symbolizer *s = symbolizer_new(&(struct symbolizer_config){ .no_debuginfod = true });
	struct sym_frame f;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	void *code;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(symbolizer_prepare_instance(s, getpid(), 7, 0), 0);
	assert_int_equal(lookup(s, 7, marker, &f), 0);
	symbolizer_retire_process(s, getpid());
	assert_int_equal(symbolizer_prepare_instance(s, getpid(), 8, 0), 0);
	code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(code != MAP_FAILED);
	assert_int_equal(lookup(s, 7, (uint64_t)(uintptr_t)code + 16, &f), -ENOENT);
	assert_false(f.has_mapping);
	assert_int_equal(lookup(s, 8, (uint64_t)(uintptr_t)code + 16, &f), 0);
	assert_true(f.has_mapping);
	munmap(code, 4096);
	close(fd);
	/* Key 0 (callers without instances) is whatever the pid runs now: retiring drops it. */
	assert_int_equal(symbolizer_user(s, getpid(), marker, &f), 0);
	symbolizer_retire_process(s, getpid());
	assert_int_equal(symbolizer_user(s, getpid(), marker, &f), 0);
	symbolizer_free(s);
}

/*
 * An exec record that completes an instance its sample made (taken during the execve) reads the
 * mappings anew: the Python attachment stays, since the room keeps its entry and never attaches the
 * instance again (every Python frame of it went unread when this dropped it too).
 */
static void test_mappings_reread_keep_python(void **state)
{
	struct symbolizer *s = symbolizer_new(&(struct symbolizer_config){ .no_debuginfod = true });
	struct python_layout layout = { 0 };
	struct sym_frame f;

	(void)state;
	assert_int_equal(symbolizer_prepare_instance(s, getpid(), 9, 0), 0);
	assert_int_equal(symbolizer_python_attach(s, getpid(), 9, &layout, 0), 0);
	symbolizer_forget_mappings(s, getpid(), 9);
	assert_true(symbolizer_python_attached(s, getpid(), 9));
	assert_int_equal(lookup(s, 9, marker, &f), -ESRCH);
	assert_int_equal(symbolizer_prepare_instance(s, getpid(), 9, 0), 0);
	assert_int_equal(lookup(s, 9, marker, &f), 0);
	/* Its samples built: all of it goes. */
	symbolizer_forget_instance(s, getpid(), 9);
	assert_false(symbolizer_python_attached(s, getpid(), 9));
	symbolizer_free(s);
}

/* This process's start in CLOCK_BOOTTIME ns at clock-tick precision, from /proc/self/stat. */
static uint64_t own_start_ns(void)
{
	uint64_t ticks;

	assert_int_equal(proc_stat_start_ticks("/proc", getpid(), &ticks), 0);
	return ticks * proc_stat_tick_ns();
}

/* Field 22 counts from the last ')': a name may hold spaces and parentheses. */
static void test_stat_parse(void **state)
{
	static const char tail[] = " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 424242 19 20\n";
	char text[256];
	uint64_t ticks = 0;

	(void)state;
	snprintf(text, sizeof(text), "77 (a) b) 7 8 9 (x)%s", tail);
	assert_int_equal(proc_stat_parse_start_ticks(text, &ticks), 0);
	assert_int_equal(ticks, 424242);
	snprintf(text, sizeof(text), "77 (plain)%s", tail);
	assert_int_equal(proc_stat_parse_start_ticks(text, &ticks), 0);
	assert_int_equal(ticks, 424242);
	/* Truncated, no ')', or not a number where the start time should be. */
	assert_int_equal(proc_stat_parse_start_ticks("77 (cut) S 1 2 3", &ticks), -EINVAL);
	assert_int_equal(proc_stat_parse_start_ticks("77 no name S 1 2 3", &ticks), -EINVAL);
	assert_int_equal(proc_stat_parse_start_ticks("77 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x9", &ticks),
			 -EINVAL);
	assert_int_equal(proc_stat_parse_start_ticks("", &ticks), -EINVAL);
	assert_int_equal(proc_stat_start_ticks("/nonexistent", 1, &ticks), -ESRCH);
	/* An exact start in ns matches the tick it falls in, and no other. */
	assert_true(proc_stat_same_start(424242 * proc_stat_tick_ns(), 424242));
	assert_true(proc_stat_same_start(424243 * proc_stat_tick_ns() - 1, 424242));
	assert_false(proc_stat_same_start(424243 * proc_stat_tick_ns(), 424242));
}

/* An instance prepared with a start time that is not the pid's (the process exited and another took
 * its pid before the caller got to it) is refused and counted; the right start time is accepted. */
static void test_start_time_checked(void **state)
{
	struct symbolizer *s = symbolizer_new(NULL);
	uint64_t start = own_start_ns();
	struct sym_frame f;

	assert_non_null(s);
	assert_int_equal(symbolizer_prepare_instance(s, getpid(), 11, start + 5000000000ULL), -ESRCH);
	assert_int_equal(symbolizer_stats(s)->process_changed, 1);
	assert_int_equal(lookup(s, 11, marker, &f), -ESRCH);
	assert_int_equal(symbolizer_prepare_instance(s, getpid(), 12, start), 0);
	assert_int_equal(lookup(s, 12, marker, &f), 0);
	assert_int_equal(symbolizer_stats(s)->process_changed, 1);
	symbolizer_free(s);
}

/* A process that exited before its files were opened (a short-lived program; a loaded host whose
 * opens waited) keeps its frames named: its files are opened through the root directory held for it
 * when its mappings were read, their device and inode checked. */
static void test_files_after_exit(void **state)
{
	struct symbolizer *s = symbolizer_new(NULL);
	struct sym_frame f;
	pid_t child;
	int status;

	assert_non_null(s);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	assert_int_equal(symbolizer_prepare_instance(s, child, 1, 0), 0);
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, &status, 0), child);
	/* The same binary: marker_function is at the same address in the child. */
	assert_int_equal(symbolizer_user_instance(s, child, 1, marker, &f), 0);
	assert_true(f.nlines > 0);
	assert_string_equal(f.lines[0].function, "marker_function");
	assert_int_equal(symbolizer_stats(s)->roots_used_after_exit, 1);
	symbolizer_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_retired_not_reread),
		cmocka_unit_test(test_mappings_reread_keep_python),
		cmocka_unit_test(test_start_time_checked),
		cmocka_unit_test(test_stat_parse),
		cmocka_unit_test(test_files_after_exit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
