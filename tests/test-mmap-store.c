// SPDX-License-Identifier: Apache-2.0
/* The processes' histories of forks, execs, exits and executable mappings (sampling/mmap_store.c):
 * an instance found by its start time, its program by the record's time, a reused pid never given
 * another process's mappings, losses refused, bounds and expiry counted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "sampling/mmap_store.h"

#define MS 1000000ULL
#define SEC 1000000000ULL

static void map(struct mmap_store *st, uint32_t pid, uint64_t start, uint64_t ino, const char *path, uint64_t t)
{
	mmap_store_map(st, pid, &(struct mmap_store_map){ .start = start, .len = 0x1000, .maj = 8, .min = 1,
							  .ino = ino, .path = path }, t);
}

static int lookup(struct mmap_store *st, uint32_t pid, uint64_t start, uint64_t t, struct mmap_store_map *out,
		  size_t *n)
{
	uint32_t parent = 0;

	return mmap_store_lookup(st, pid, start, t, out, 16, n, &parent, NULL);
}

static void test_exec_resets(void **state)
{
	struct mmap_store *st = mmap_store_new();
	struct mmap_store_map out[16];
	uint32_t parent = 0;
	enum mmap_store_whole whole = MMAP_STORE_GAP;
	size_t n;

	(void)state;
	/* sh (pid 10) forks 11 at 1 s, which execs gzip at 1.001 s; events added out of order. */
	map(st, 11, 0x1000, 5, "/bin/sh", SEC + 500);          /* a mapping before the exec: sh's */
	mmap_store_exec(st, 11, SEC + 1 * MS);
	mmap_store_fork(st, 11, 10, SEC + 100);
	map(st, 11, 0x7000, 6, "/usr/bin/gzip", SEC + 2 * MS);
	map(st, 11, 0x9000, 7, "/lib/libc.so.6", SEC + 3 * MS);
	assert_int_equal(mmap_store_lookup(st, 11, SEC, SEC + 10 * MS, out, 16, &n, &parent, &whole), 0);
	assert_int_equal(parent, 10);
	assert_int_equal(whole, MMAP_STORE_WHOLE); /* exec seen, nothing let go: /proc need not be read */
	assert_int_equal(n, 2);
	assert_string_equal(out[0].path, "/usr/bin/gzip");
	assert_string_equal(out[1].path, "/lib/libc.so.6");
	/* A record of before the exec: the old program's mappings only. */
	assert_int_equal(lookup(st, 11, SEC, SEC + 900, out, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].path, "/bin/sh");
	/* A record before the program's second mapping: both (the instance's mappings serve its later
	 * records too). */
	assert_int_equal(lookup(st, 11, SEC, SEC + 2 * MS + 1, out, &n), 0);
	assert_int_equal(n, 2);
	/* A mapping made over another replaces it. */
	map(st, 11, 0x7000, 8, "/usr/bin/other", SEC + 4 * MS);
	assert_int_equal(lookup(st, 11, SEC, SEC + 10 * MS, out, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(out[0].path, "/lib/libc.so.6");
	assert_string_equal(out[1].path, "/usr/bin/other");
	mmap_store_free(st);
}

static void test_pid_reuse(void **state)
{
	struct mmap_store *st = mmap_store_new();
	struct mmap_store_map out[16];
	size_t n;

	(void)state;
	mmap_store_fork(st, 20, 1, SEC);
	mmap_store_exec(st, 20, SEC + MS);
	map(st, 20, 0x1000, 1, "/usr/bin/first", SEC + 2 * MS);
	mmap_store_exit(st, 20, SEC + 30 * MS);
	mmap_store_fork(st, 20, 1, 3 * SEC);
	mmap_store_exec(st, 20, 3 * SEC + MS);
	map(st, 20, 0x1000, 2, "/usr/bin/second", 3 * SEC + 2 * MS);
	/* Each instance by its start time, whatever the record's time. */
	assert_int_equal(lookup(st, 20, SEC, 5 * SEC, out, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].path, "/usr/bin/first");
	assert_int_equal(lookup(st, 20, 3 * SEC, 5 * SEC, out, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].path, "/usr/bin/second");
	/* An instance whose fork was never seen (started before, or dropped): nothing, not another's. */
	assert_int_equal(lookup(st, 20, 2 * SEC, 5 * SEC, out, &n), -ENOENT);
	assert_int_equal(lookup(st, 21, 2 * SEC, 5 * SEC, out, &n), -ENOENT);
	assert_int_equal(lookup(st, 20, 0, 5 * SEC, out, &n), -EINVAL);
	/* Events lost during its life: refused. */
	mmap_store_lost(st, 3 * SEC + 5 * MS);
	assert_int_equal(lookup(st, 20, 3 * SEC, 5 * SEC, out, &n), -ESTALE);
	assert_int_equal(lookup(st, 20, SEC, 5 * SEC, out, &n), -ESTALE);
	mmap_store_fork(st, 22, 1, 4 * SEC); /* born after the loss: trusted */
	assert_int_equal(lookup(st, 22, 4 * SEC, 5 * SEC, out, &n), 0);
	mmap_store_free(st);
}

static void test_bounds_and_expiry(void **state)
{
	struct mmap_store *st = mmap_store_new();
	struct mmap_store_counters c;
	struct mmap_store_map out[16];
	char path[64];
	size_t n;

	(void)state;
	/* One pid's events: the oldest go first (the fork among them: the instance is then unknown). */
	mmap_store_fork(st, 30, 1, SEC);
	for (unsigned i = 0; i < MMAP_STORE_PER_PID; i++) {
		snprintf(path, sizeof(path), "/lib/l%u.so", i);
		map(st, 30, 0x10000 * (i + 1), i + 1, path, SEC + (i + 1) * MS);
	}
	mmap_store_counters(st, &c);
	assert_int_equal(c.events_dropped, 1);
	assert_int_equal(lookup(st, 30, SEC, 10 * SEC, out, &n), -ENOENT);
	/* Pids: exited ones go first. */
	for (uint32_t pid = 1000; pid < 1000 + MMAP_STORE_PIDS; pid++) {
		mmap_store_fork(st, pid, 1, 2 * SEC + pid);
		if (pid == 1500)
			mmap_store_exit(st, pid, 2 * SEC + pid + 1);
	}
	mmap_store_counters(st, &c);
	assert_int_equal(c.pids, MMAP_STORE_PIDS);
	assert_int_equal(c.pids_dropped, 1);
	assert_false(mmap_store_has(st, 1500));
	assert_true(mmap_store_has(st, 30)); /* alive: kept over the exited one */
	/* Expiry: a history goes MMAP_STORE_KEEP_NS after its exit, not before. */
	mmap_store_exit(st, 1001, 3 * SEC);
	mmap_store_expire(st, 3 * SEC + MMAP_STORE_KEEP_NS);
	assert_true(mmap_store_has(st, 1001));
	mmap_store_expire(st, 3 * SEC + MMAP_STORE_KEEP_NS + 1);
	assert_false(mmap_store_has(st, 1001));
	mmap_store_counters(st, &c);
	assert_int_equal(c.expired, 1);
	/* Paths: bounded in bytes, the rest counted. */
	{
		static char big[4000];

		memset(big, 'a', sizeof(big) - 1);
		big[0] = '/';
		for (unsigned i = 0; i < MMAP_STORE_PATH_BYTES / sizeof(big) + 10; i++)
			map(st, 2000 + i % 100, 0x1000, 1, big, 4 * SEC);
	}
	mmap_store_counters(st, &c);
	assert_true(c.paths_dropped > 0);
	assert_true(c.path_bytes <= MMAP_STORE_PATH_BYTES);
	mmap_store_free(st);
}

/* When a history is every mapping of the program (the symbolizer then reads no /proc/PID/maps). */
static void test_whole(void **state)
{
	struct mmap_store *st = mmap_store_new();
	struct mmap_store_map out[16];
	uint32_t parent = 0;
	enum mmap_store_whole whole = MMAP_STORE_WHOLE;
	static struct mmap_store_map big[MMAP_STORE_PER_PID];
	size_t n;

	(void)state;
	/* 21 forked, never exec'd: it runs what it inherited, which no event reported. */
	mmap_store_fork(st, 21, 20, SEC);
	map(st, 21, 0x1000, 5, "/usr/lib/libx.so", SEC + MS);
	assert_int_equal(mmap_store_lookup(st, 21, SEC, SEC + 2 * MS, out, 16, &n, &parent, &whole), 0);
	assert_int_equal(whole, MMAP_STORE_INHERITED);
	/* A fork and nothing after it (its history's last event): inherited, nothing read past it. */
	mmap_store_fork(st, 22, 20, SEC);
	assert_int_equal(mmap_store_lookup(st, 22, SEC, SEC + 2 * MS, out, 16, &n, &parent, &whole), 0);
	assert_int_equal(whole, MMAP_STORE_INHERITED);
	assert_int_equal(n, 0);
	/* A record before its exec: the inherited program, never the exec'd one's mappings. */
	mmap_store_exec(st, 22, SEC + 3 * MS);
	map(st, 22, 0x2000, 6, "/usr/bin/prog", SEC + 4 * MS);
	assert_int_equal(mmap_store_lookup(st, 22, SEC, SEC + 2 * MS, out, 16, &n, &parent, &whole), 0);
	assert_int_equal(whole, MMAP_STORE_INHERITED);
	assert_int_equal(n, 0);
	/* Once it exec'd: whole. */
	mmap_store_exec(st, 21, SEC + 3 * MS);
	map(st, 21, 0x2000, 6, "/usr/bin/prog", SEC + 4 * MS);
	map(st, 21, 0x3000, 7, "/lib/libc.so.6", SEC + 5 * MS);
	assert_int_equal(mmap_store_lookup(st, 21, SEC, SEC + 6 * MS, out, 16, &n, &parent, &whole), 0);
	assert_int_equal(whole, MMAP_STORE_WHOLE);
	assert_int_equal(n, 2);
	/* Left out by max: not whole. */
	assert_int_equal(mmap_store_lookup(st, 21, SEC, SEC + 6 * MS, out, 1, &n, &parent, &whole), 0);
	assert_int_equal(whole, MMAP_STORE_GAP);
	assert_int_equal(n, 1);
	/* Events lost in its life: refused. */
	mmap_store_lost(st, SEC + 7 * MS);
	assert_int_equal(mmap_store_lookup(st, 21, SEC, SEC + 8 * MS, out, 16, &n, &parent, &whole), -ESTALE);
	assert_int_equal(whole, MMAP_STORE_GAP);
	/* 31 exec'd, then its history filled (MMAP_STORE_PER_PID) and an event older than its oldest
	 * came (not kept): a gap before the program's exec is not the program's, still whole. */
	mmap_store_fork(st, 31, 30, 10 * SEC);
	mmap_store_exec(st, 31, 10 * SEC + 2 * MS);
	for (unsigned i = 0; i < MMAP_STORE_PER_PID - 2; i++)
		map(st, 31, 0x100000 + i * 0x1000, 100 + i, "/usr/lib/liby.so", 10 * SEC + 3 * MS + i);
	mmap_store_map(st, 31, &(struct mmap_store_map){ .start = 0x900000, .len = 0x1000, .ino = 9, .path = "/z" },
		       10 * SEC - 1 * MS); /* older than the oldest kept (the fork): not kept */
	assert_int_equal(mmap_store_lookup(st, 31, 10 * SEC, 10 * SEC + 500 * MS, big, MMAP_STORE_PER_PID, &n, &parent,
					   &whole), 0);
	assert_int_equal(whole, MMAP_STORE_WHOLE);
	/* 41 exec'd, then one of its mappings was not kept (MMAP_STORE_PATH_BYTES of paths held by
	 * other pids): not whole. */
	mmap_store_fork(st, 41, 40, 20 * SEC);
	mmap_store_exec(st, 41, 20 * SEC + 1 * MS);
	map(st, 41, 0x2000, 6, "/usr/bin/prog", 20 * SEC + 2 * MS);
	{
		static char path[4001];

		memset(path, 'p', sizeof(path) - 1);
		path[0] = '/';
		struct mmap_store_counters c;

		for (uint32_t pid = 1000; pid < 1020; pid++)
			for (unsigned i = 0; i < MMAP_STORE_PER_PID / 2; i++)
				map(st, pid, 0x1000 + i * 0x1000, i + 1, path, 20 * SEC + 3 * MS);
		/* The bytes left, to the last one: */
		for (uint32_t pid = 2000; pid < 2100; pid++)
			for (unsigned i = 0; i < MMAP_STORE_PER_PID / 2; i++)
				map(st, pid, 0x1000 + i * 0x1000, i + 1, "/", 20 * SEC + 3 * MS);
		mmap_store_counters(st, &c);
		assert_true(c.path_bytes + 2 > MMAP_STORE_PATH_BYTES);
	}
	map(st, 41, 0x3000, 7, "/lib/libc.so.6", 20 * SEC + 4 * MS);
	assert_int_equal(mmap_store_lookup(st, 41, 20 * SEC, 20 * SEC + 5 * MS, out, 16, &n, &parent, &whole), 0);
	assert_int_equal(whole, MMAP_STORE_GAP);
	assert_int_equal(n, 1);
	mmap_store_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_resets),
		cmocka_unit_test(test_pid_reuse),
		cmocka_unit_test(test_bounds_and_expiry),
		cmocka_unit_test(test_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
