// SPDX-License-Identifier: Apache-2.0
/* The event loop's turns timed (ops/loop_turns.c): the longest and its phases, the ranges, the bound. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>

#include "ops/loop_turns.h"
#include "ops/self_metrics.h"

#define MS 1000000ULL

static void test_turns(void **state)
{
	struct loop_turns t = { 0 };

	(void)state;
	loop_turns_end(&t, 5 * MS, 0); /* none begun */
	assert_int_equal(t.in_range[0], 0);
	/* A 30 ms turn: 20 ms reading, 5 building, 5 else; 10 ms on a CPU. */
	loop_turns_begin(&t, 1000 * MS, 100 * MS);
	loop_turns_phase(&t, LOOP_PHASE_READ, 1002 * MS);
	loop_turns_phase(&t, LOOP_PHASE_BUILD, 1022 * MS);
	loop_turns_phase(&t, LOOP_PHASE_OTHER, 1027 * MS);
	/* The next begins as it ends: 2 ms. */
	loop_turns_begin(&t, 1030 * MS, 110 * MS);
	loop_turns_end(&t, 1032 * MS, 111 * MS);
	assert_int_equal(t.max_ns, 30 * MS);
	assert_int_equal(t.max_cpu_ns, 10 * MS);
	assert_int_equal(t.max_phase_ns[LOOP_PHASE_READ], 20 * MS);
	assert_int_equal(t.max_phase_ns[LOOP_PHASE_BUILD], 5 * MS);
	assert_int_equal(t.max_phase_ns[LOOP_PHASE_OTHER], 5 * MS);
	assert_int_equal(t.in_range[0], 1); /* under 10 ms */
	assert_int_equal(t.in_range[2], 1); /* 25 to 50 ms */
	assert_int_equal(t.over_bound, 0);
	/* Over the bound: counted, and in the last range. */
	loop_turns_begin(&t, 2000 * MS, 200 * MS);
	loop_turns_end(&t, 2000 * MS + (LOOP_TURN_BOUND_MS + 1) * MS, 201 * MS);
	assert_int_equal(t.over_bound, 1);
	assert_int_equal(t.in_range[LOOP_TURN_RANGES - 1], 1);
	assert_int_equal(t.max_cpu_turn_ns, 10 * MS);
	assert_string_equal(loop_phase_name(LOOP_PHASE_REPLAY), "replay");
}

/* The ring buffer's drops put down to the start, the time between turns, or a turn's longest phase. */
static void test_dropped(void **state)
{
	struct loop_turns t = { 0 };

	(void)state;
	loop_turns_dropped(&t, 7); /* the first look: the start's */
	assert_int_equal(t.dropped_at_start, 7);
	/* A turn mostly building: 3 dropped in it. */
	loop_turns_begin(&t, 1000 * MS, 0);
	loop_turns_dropped(&t, 7);
	loop_turns_phase(&t, LOOP_PHASE_READ, 1001 * MS);
	loop_turns_phase(&t, LOOP_PHASE_BUILD, 1003 * MS);
	loop_turns_dropped(&t, 10);
	loop_turns_end(&t, 1040 * MS, 0);
	assert_int_equal(t.dropped_in[LOOP_PHASE_BUILD], 3);
	assert_int_equal(t.dropped_long, 0);
	/* 5 between turns, then a long turn reading: 2 in it. */
	loop_turns_dropped(&t, 15);
	assert_int_equal(t.dropped_between, 5);
	loop_turns_begin(&t, 2000 * MS, 0);
	loop_turns_phase(&t, LOOP_PHASE_READ, 2000 * MS);
	loop_turns_dropped(&t, 17);
	loop_turns_end(&t, 2000 * MS + (LOOP_TURN_BOUND_MS + 1) * MS, 0);
	assert_int_equal(t.dropped_in[LOOP_PHASE_READ], 2);
	assert_int_equal(t.dropped_long, 2);
	assert_int_equal(t.dropped_in[LOOP_PHASE_BUILD], 3);
	assert_int_equal(t.dropped_between, 5);
	/* The gap between reads. */
	loop_turns_read(&t, 100 * MS);
	loop_turns_read(&t, 350 * MS);
	loop_turns_read(&t, 400 * MS);
	assert_int_equal(t.read_gap_max_ns, 250 * MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_turns),
		cmocka_unit_test(test_dropped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
