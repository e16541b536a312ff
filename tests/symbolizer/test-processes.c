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
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

/* A fake history: this process's own executable mapping only (the one holding marker_function),
 * whole until gap is set. */
struct fake_history {
	struct symbolizer_mapping own;
	char path[4096];
	bool gap;
	unsigned asked;
};

static int fake_history(void *ctx, pid_t pid, uint64_t start_ns, uint64_t time_ns, struct symbolizer_mapping *out,
			size_t max, size_t *n, pid_t *root_pid, enum symbolizer_history_whole *whole)
{
	struct fake_history *h = ctx;

	(void)pid, (void)start_ns, (void)time_ns, (void)max;
	h->asked++;
	out[0] = h->own;
	*n = 1;
	*root_pid = 0;
	if (whole)
		*whole = h->gap ? SYMBOLIZER_HISTORY_GAP : SYMBOLIZER_HISTORY_WHOLE;
	return 0;
}

static void own_mapping(struct fake_history *h)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4608];
	struct stat st;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, offset;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*u %4095s", &start, &end, &offset, h->path) == 4 &&
		    marker >= start && marker < end) {
			assert_int_equal(stat(h->path, &st), 0);
			h->own = (struct symbolizer_mapping){ .start = start, .end = end, .offset = offset,
				.dev = st.st_dev, .inode = st.st_ino, .path = h->path };
			break;
		}
	}
	fclose(f);
	assert_non_null(h->own.path);
}

/* A process served from its history (no /proc/PID/maps read) whose history gets a gap while it lives
 * (records lost): asked again, it is read from /proc from then on (counted), so a library it mapped
 * is found; with a start time that is not the pid's any more, it is not read (its pid taken by
 * another process): it keeps what it had, and is counted as changed. */
static void test_gap_reads_proc(void **state)
{
	struct fake_history h = { 0 };
	struct symbolizer *s = symbolizer_new(&(struct symbolizer_config){ .no_debuginfod = true });
	uint64_t start = own_start_ns(), libc = (uint64_t)(uintptr_t)&getppid;
	const struct symbolizer_stats *st = symbolizer_stats(s);
	struct sym_frame f;

	(void)state;
	own_mapping(&h);
	symbolizer_set_history(s, fake_history, &h);
	assert_int_equal(symbolizer_prepare_instance_at(s, getpid(), 21, start, 1), 0);
	assert_int_equal(st->processes_from_events, 1);
	assert_int_equal(st->maps_file_reads, 0);
	assert_int_equal(lookup(s, 21, marker, &f), 0);
	assert_string_equal(f.lines[0].function, "marker_function");
	/* Whole, the history is all there is: libc is not in it, and /proc is not read. */
	assert_int_equal(symbolizer_refresh_instance(s, getpid(), 21, start), 0);
	assert_int_equal(lookup(s, 21, libc, &f), -ENOENT); /* outside every mapping */
	assert_int_equal(st->maps_file_reads, 0);
	/* The gap: read from /proc once asked again. */
	h.gap = true;
	assert_int_equal(symbolizer_refresh_instance(s, getpid(), 21, start), 0);
	assert_int_equal(st->maps_events_gap, 1);
	assert_int_equal(st->maps_file_reads, 1);
	assert_int_equal(lookup(s, 21, libc, &f), 0);
	assert_true(f.has_mapping);
	assert_int_equal(lookup(s, 21, marker, &f), 0);
	assert_string_equal(f.lines[0].function, "marker_function");
	/* From then on the history is not asked for it. */
	h.asked = 0;
	assert_int_equal(symbolizer_refresh_instance(s, getpid(), 21, start), 0);
	assert_int_equal(h.asked, 0);
	assert_int_equal(st->maps_file_reads, 2);

	/* Another instance whose start time is not this pid's: refused after the gap, keeps its own. */
	h.gap = false;
	assert_int_equal(symbolizer_prepare_instance_at(s, getpid(), 22, start + 5000000000ULL, 1), 0);
	h.gap = true;
	assert_int_equal(symbolizer_refresh_instance(s, getpid(), 22, start + 5000000000ULL), -ESRCH);
	assert_int_equal(st->maps_events_gap, 2);
	assert_int_equal(st->process_changed, 1);
	assert_int_equal(st->maps_file_reads, 2);
	assert_int_equal(lookup(s, 22, marker, &f), 0);
	assert_string_equal(f.lines[0].function, "marker_function");
	assert_int_equal(lookup(s, 22, libc, &f), -ENOENT);
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
		cmocka_unit_test(test_gap_reads_proc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
