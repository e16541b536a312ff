// SPDX-License-Identifier: Apache-2.0
/* --memory-limit's arithmetic (ops/memory_limit.c): the symbol cache gets what the rest of the
 * daemon leaves, the rest's peaks of this window and the last are left room for, and the limit
 * that the rest alone is over is counted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "ops/memory_limit.h"

#define MIB (1ULL << 20)
#define S 1000000000ULL

static void test_off(void **state)
{
	struct memory_limit l;

	(void)state;
	memory_limit_init(&l, 0, 16 * MIB, 4 * MIB, 0);
	assert_true(memory_limit_update(&l, S, 500 * MIB, 0) == UINT64_MAX);
	assert_int_equal(l.checks_over, 0);
}

/* The cache gets the limit less the rest (RSS less what the cache accounts for). */
static void test_rest(void **state)
{
	struct memory_limit l;

	(void)state;
	memory_limit_init(&l, 48 * MIB, 16 * MIB, 4 * MIB, 0);
	/* 20 MiB resident, 4 of them the cache's: the rest is 16, the cache may grow to 32. */
	assert_int_equal(memory_limit_update(&l, S, 20 * MIB, 4 * MIB), 32 * MIB);
	/* gRPC's libraries loaded: the rest is 26, the cache 22 (it held 30: lowered). */
	assert_int_equal(memory_limit_update(&l, 2 * S, 56 * MIB, 30 * MIB), 22 * MIB);
	assert_int_equal(l.checks_over, 1);
	assert_int_equal(l.lowered, 1);
	/* The cache accounts for more than is resident (its files' untouched pages): the rest is
	 * never taken below 0, the bound never above the limit. */
	memory_limit_init(&l, 48 * MIB, 16 * MIB, 4 * MIB, 0);
	assert_int_equal(memory_limit_update(&l, S, 10 * MIB, 30 * MIB), 48 * MIB);
}

/* A peak of the rest (an export's profile) holds the bound down for this window and the next,
 * then is forgotten; what stays keeps it down. */
static void test_windows(void **state)
{
	struct memory_limit l;
	uint64_t t = S;

	(void)state;
	memory_limit_init(&l, 48 * MIB, 16 * MIB, 4 * MIB, 0);
	assert_int_equal(memory_limit_update(&l, t, 30 * MIB, 10 * MIB), 28 * MIB); /* rest 20 */
	t += S;
	assert_int_equal(memory_limit_update(&l, t, 38 * MIB, 10 * MIB), 20 * MIB); /* export: rest 28 */
	t += S;
	assert_int_equal(memory_limit_update(&l, t, 30 * MIB, 10 * MIB), 20 * MIB); /* held */
	t += MEMORY_LIMIT_WINDOW_NS;
	assert_int_equal(memory_limit_update(&l, t, 30 * MIB, 10 * MIB), 20 * MIB); /* the window before's */
	t += MEMORY_LIMIT_WINDOW_NS;
	assert_int_equal(memory_limit_update(&l, t, 30 * MIB, 10 * MIB), 28 * MIB); /* forgotten */
	/* A stall of two windows forgets both. */
	assert_int_equal(memory_limit_update(&l, t + S, 40 * MIB, 10 * MIB), 18 * MIB);
	t += 3 * MEMORY_LIMIT_WINDOW_NS;
	assert_int_equal(memory_limit_update(&l, t, 30 * MIB, 10 * MIB), 28 * MIB);
}

/* The rest alone over the limit: nothing left for the cache, every such check counted. */
static void test_over(void **state)
{
	struct memory_limit l;

	(void)state;
	memory_limit_init(&l, 8 * MIB, 16 * MIB, 4 * MIB, 0);
	assert_int_equal(memory_limit_update(&l, S, 30 * MIB, 4 * MIB), 0);
	assert_int_equal(memory_limit_update(&l, 2 * S, 29 * MIB, 4 * MIB), 0);
	assert_int_equal(l.checks_over, 2);
	assert_int_equal(l.checks, 2);
	assert_int_equal(l.rss, 29 * MIB);
}

/* The cache at its floor and the limit still not kept: intervals end at half the bytes, at most
 * once in MEMORY_LIMIT_SHRINK_NS, down to 2 MiB; back up once the cache has room. */
static void test_interval(void **state)
{
	struct memory_limit l;
	uint64_t t = 100 * S;

	(void)state;
	memory_limit_init(&l, 48 * MIB, 16 * MIB, 8 * MIB, 0);
	memory_limit_update(&l, t, 40 * MIB, 20 * MIB); /* rest 20: the cache gets 28, room */
	assert_int_equal(l.interval_budget, 8 * MIB);
	memory_limit_update(&l, t += S, 60 * MIB, 16 * MIB); /* rest 44: the cache would get 4 */
	assert_int_equal(l.interval_budget, 4 * MIB);
	assert_int_equal(l.intervals_shrunk, 1);
	memory_limit_update(&l, t += S, 60 * MIB, 16 * MIB); /* not again within 10 s */
	assert_int_equal(l.interval_budget, 4 * MIB);
	memory_limit_update(&l, t += MEMORY_LIMIT_SHRINK_NS, 60 * MIB, 16 * MIB);
	assert_int_equal(l.interval_budget, 2 * MIB);
	memory_limit_update(&l, t += MEMORY_LIMIT_SHRINK_NS, 60 * MIB, 16 * MIB); /* 2 MiB at least */
	assert_int_equal(l.interval_budget, 2 * MIB);
	assert_int_equal(l.intervals_shrunk, 2);
	/* Two windows later, rest 26: the cache would get 22 < 16 + 4 x 2 MiB: not yet. */
	t += 2 * MEMORY_LIMIT_WINDOW_NS;
	memory_limit_update(&l, t, 42 * MIB, 16 * MIB);
	assert_int_equal(l.interval_budget, 2 * MIB);
	/* Two more, rest 20: 28 >= 24, doubled; then not again before MEMORY_LIMIT_GROW_NS. */
	t += 2 * MEMORY_LIMIT_WINDOW_NS;
	memory_limit_update(&l, t, 36 * MIB, 16 * MIB);
	assert_int_equal(l.interval_budget, 4 * MIB);
	t += 2 * MEMORY_LIMIT_WINDOW_NS;
	memory_limit_update(&l, t, 20 * MIB, 16 * MIB); /* rest 4: 44 >= 16 + 4 x 4 */
	assert_int_equal(l.interval_budget, 8 * MIB);
	memory_limit_update(&l, t += MEMORY_LIMIT_GROW_NS, 20 * MIB, 16 * MIB);
	assert_int_equal(l.interval_budget, 8 * MIB); /* never over --interval-memory */
}

/* Exporting, the first exports' memory is counted before they come, and for a window after the
 * first is seen. */
static void test_reserve(void **state)
{
	struct memory_limit l;
	uint64_t t = S;

	(void)state;
	memory_limit_init(&l, 48 * MIB, 16 * MIB, 4 * MIB, 0);
	l.reserve = MEMORY_LIMIT_FIRST_EXPORT;
	assert_int_equal(memory_limit_update(&l, t, 14 * MIB, 4 * MIB), 22 * MIB); /* rest 10 + 16 */
	memory_limit_update(&l, t += 60 * S, 14 * MIB, 4 * MIB);
	assert_int_equal(l.reserve, 16 * MIB); /* no export seen yet */
	memory_limit_export_seen(&l, t);
	memory_limit_export_seen(&l, t + 5 * S); /* the first only */
	memory_limit_update(&l, t += MEMORY_LIMIT_WINDOW_NS - S, 14 * MIB, 4 * MIB);
	assert_int_equal(l.reserve, 16 * MIB);
	memory_limit_update(&l, t += S, 14 * MIB, 4 * MIB);
	assert_int_equal(l.reserve, 0);
	/* The reserve's peak leaves with its windows. */
	assert_int_equal(memory_limit_update(&l, t += 2 * MEMORY_LIMIT_WINDOW_NS, 24 * MIB, 4 * MIB), 28 * MIB);
}

/* The process's own RSS reads as a plausible size. */
static void test_read_rss(void **state)
{
	uint64_t rss = 0;

	(void)state;
	assert_int_equal(memory_limit_read_rss(&rss), 0);
	assert_true(rss > 64 * 1024 && rss < 64 * 1024 * MIB);
}

/* A high point noted between checks (another thread's) counts at the next check, once. */
static void test_noted(void **state)
{
	uint64_t rss = 0;

	(void)state;
	assert_int_equal(memory_limit_read_rss(&rss), 0);
	assert_true(memory_limit_take_noted() == 0); /* nothing noted */
	memory_limit_note_rss();
	memory_limit_note_rss();
	assert_true(memory_limit_take_noted() >= rss / 2);
	assert_true(memory_limit_take_noted() == 0); /* forgotten once taken */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_rest),
		cmocka_unit_test(test_windows),
		cmocka_unit_test(test_over),
		cmocka_unit_test(test_read_rss),
		cmocka_unit_test(test_noted),
		cmocka_unit_test(test_interval),
		cmocka_unit_test(test_reserve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
