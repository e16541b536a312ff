// SPDX-License-Identifier: Apache-2.0
/* Stack windows sized by need (sampling/stack_need.c): when a thread's top is lowered, kept,
 * withdrawn or left alone, and the bounds on the changes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>

#include "sampling/stack_need.h"

#define SEC 1000000000ULL

struct calls {
	unsigned n;
	uint32_t tid;
	uint64_t window_end, top;
	int result;
};

static int fake_set(void *ctx, uint32_t tid, uint64_t window_end, uint64_t top, uint64_t now_ns)
{
	struct calls *c = ctx;

	(void)now_ns;
	c->n++;
	c->tid = tid;
	c->window_end = window_end;
	c->top = top;
	return c->result;
}

/* A whole window up to a page boundary (the mapping's end) whose walk needed up to needed. */
static struct unwind_sample_extent whole(uint64_t needed)
{
	return (struct unwind_sample_extent){ .sp = 0x7ffd0000f000ULL - 9000, .end = 0x7ffd0000f000ULL,
					      .needed = needed, .whole = true };
}

static void test_set_then_kept(void **state)
{
	struct stack_need_counters counters = { 0 };
	struct calls c = { 0 };
	struct stack_need *n = calloc(1, sizeof(*n));
	struct unwind_sample_extent e = whole(0x7ffd0000f000ULL - 8500);
	uint64_t t = 5 * SEC;

	(void)state;
	*n = (struct stack_need){ .set = fake_set, .ctx = &c, .counters = &counters };
	/* Set at the thread's second whole window within a second, not at its first. */
	stack_need_update(n, 42, t - SEC / 2, &e);
	assert_int_equal(c.n, 0);
	stack_need_update(n, 42, t, &e);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.tid, 42);
	assert_true(c.window_end == e.end);
	/* The need plus the slack, 8-aligned, never a page boundary. */
	assert_true(c.top >= e.needed + STACK_NEED_SLACK && c.top < e.needed + STACK_NEED_SLACK + 16);
	assert_true(c.top % STACK_NEED_PAGE != 0);
	assert_int_equal(counters.set, 1);
	/* A sample taken before, still in the ring buffer: not set again. */
	stack_need_update(n, 42, t + 1000, &e);
	assert_int_equal(c.n, 1);
	/* Windows cut by the need and walked: kept, and set again once half the hold passed. */
	e = (struct unwind_sample_extent){ .sp = c.top - 400, .end = c.top, .needed = c.top - 64, .whole = true };
	stack_need_update(n, 42, t + SEC / 4, &e);
	assert_int_equal(c.n, 1);
	stack_need_update(n, 42, t + SEC * 3 / 4, &e);
	assert_int_equal(c.n, 2);
	assert_true(c.top == e.end && c.window_end == e.end);
	assert_int_equal(counters.refreshed, 1);
	free(n);
}

static void test_withdrawn_and_backed_off(void **state)
{
	struct stack_need_counters counters = { 0 };
	struct calls c = { 0 };
	struct stack_need *n = calloc(1, sizeof(*n));
	struct unwind_sample_extent cut = { .sp = 0x1000f00 - 300, .end = 0x1000f08, .whole = true, .failed = true };
	struct unwind_sample_extent e = whole(0x7ffd0000f000ULL - 8500);

	(void)state;
	*n = (struct stack_need){ .set = fake_set, .ctx = &c, .counters = &counters };
	assert_true(stack_need_cut(&cut));
	stack_need_update(n, 7, SEC, &cut);
	assert_int_equal(c.n, 1);
	assert_true(c.top == 0); /* forgotten */
	assert_int_equal(counters.withdrawn, 1);
	/* The thread's other failed samples: withdrawn once. */
	stack_need_update(n, 7, SEC + 10, &cut);
	assert_int_equal(c.n, 1);
	/* Not set again for the back-off, then set. */
	stack_need_update(n, 7, 2 * SEC, &e);
	assert_int_equal(c.n, 1);
	assert_int_equal(counters.backed_off, 1);
	stack_need_update(n, 7, SEC + STACK_NEED_BACKOFF_NS + 1, &e);
	stack_need_update(n, 7, SEC + STACK_NEED_BACKOFF_NS + 2, &e);
	assert_int_equal(c.n, 2);
	assert_int_equal(counters.set, 1);
	free(n);
}

static void test_left_alone(void **state)
{
	struct stack_need_counters counters = { 0 };
	struct calls c = { 0 };
	struct stack_need *n = calloc(1, sizeof(*n));
	struct unwind_sample_extent e;

	(void)state;
	*n = (struct stack_need){ .set = fake_set, .ctx = &c, .counters = &counters };
	/* Seen once only; not whole (the stack goes on), no entry reached, an empty window, a need at
	 * the end: each seen twice. */
	e = whole(0x7ffd0000f000ULL - 8500);
	stack_need_update(n, 9, SEC, &e);
	stack_need_update(n, 9, 3 * SEC, &e);
	e = whole(0x7ffd0000f000ULL - 8500);
	e.whole = false;
	stack_need_update(n, 1, SEC, &e);
	stack_need_update(n, 1, SEC + 1, &e);
	e = whole(0);
	stack_need_update(n, 2, SEC, &e);
	stack_need_update(n, 2, SEC + 1, &e);
	e = (struct unwind_sample_extent){ .sp = 0x5000a08, .end = 0x5000a08, .whole = true, .failed = true };
	assert_false(stack_need_cut(&e));
	stack_need_update(n, 3, SEC, &e);
	stack_need_update(n, 3, SEC + 1, &e);
	e = whole(0x7ffd0000f000ULL - 40);
	stack_need_update(n, 4, SEC, &e);
	stack_need_update(n, 4, SEC + 1, &e);
	/* A cut window walked fine, of a thread never set here: nothing to keep. */
	e = (struct unwind_sample_extent){ .sp = 0x5000a08, .end = 0x5000c08, .whole = true };
	stack_need_update(n, 5, SEC, &e);
	stack_need_update(n, 5, SEC + 1, &e);
	/* Off. */
	n->set = NULL;
	e = whole(0x7ffd0000f000ULL - 8500);
	stack_need_update(n, 6, SEC, &e);
	stack_need_update(n, 6, SEC + 1, &e);
	assert_int_equal(c.n, 0);
	free(n);
}

static void test_budget_and_refusal(void **state)
{
	struct stack_need_counters counters = { 0 };
	struct calls c = { .result = -116 };
	struct stack_need *n = calloc(1, sizeof(*n));
	struct unwind_sample_extent e = whole(0x7ffd0000f000ULL - 8500);

	(void)state;
	*n = (struct stack_need){ .set = fake_set, .ctx = &c, .counters = &counters };
	stack_need_update(n, 1, SEC - 1, &e);
	stack_need_update(n, 1, SEC, &e);
	assert_int_equal(counters.refused, 1);
	assert_int_equal(counters.set, 0);
	c.result = 0;
	for (uint32_t tid = 100; tid < 100 + STACK_NEED_PER_SECOND + 10; tid++) {
		stack_need_update(n, tid, 3 * SEC + tid, &e);
		stack_need_update(n, tid, 3 * SEC + tid + 1, &e);
	}
	assert_int_equal(counters.set, STACK_NEED_PER_SECOND);
	assert_int_equal(counters.over_budget, 10);
	/* A new second, a new budget. */
	stack_need_update(n, 5000, 4 * SEC, &e);
	stack_need_update(n, 5000, 4 * SEC + 1, &e);
	assert_int_equal(counters.set, STACK_NEED_PER_SECOND + 1);
	free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_then_kept),
		cmocka_unit_test(test_withdrawn_and_backed_off),
		cmocka_unit_test(test_left_alone),
		cmocka_unit_test(test_budget_and_refusal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
