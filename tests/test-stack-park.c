// SPDX-License-Identifier: Apache-2.0
/* Off-CPU and allocation stacks put off, and their closing records held (sampling/stack_park.c):
 * keys read from records, closings paired with the oldest open stack of their key, bounded. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "sampling/stack_park.h"

static union stack_closing end_of(uint32_t tid, uint64_t start_ns, uint64_t end_ns)
{
	union stack_closing c;

	memset(&c, 0, sizeof(c));
	c.end = (struct otelprof_off_cpu_end){
		.hdr = { .kind = OTELPROF_RECORD_OFF_CPU_END, .size = sizeof(c.end) },
		.start_ns = start_ns, .end_ns = end_ns, .tid = tid,
	};
	return c;
}

static void test_keys(void **state)
{
	struct {
		struct otelprof_sample s;
		struct otelprof_alloc a;
	} alloc = { .s = { .hdr = { .kind = OTELPROF_RECORD_ALLOC, .size = sizeof(alloc) }, .pid = 7, .tid = 8 },
		    .a = { .ptr = 0x1000 } };
	struct otelprof_free f = { .hdr = { .kind = OTELPROF_RECORD_FREE, .size = sizeof(f) }, .pid = 7, .ptr = 0x1000 };
	struct otelprof_sample off = { .hdr = { .kind = OTELPROF_RECORD_OFF_CPU, .size = sizeof(off) }, .pid = 7, .tid = 9,
				       .time_ns = 55 };
	union stack_closing end = end_of(9, 55, 60);
	struct stack_park_key k;

	(void)state;
	k = stack_park_key_of(&alloc);
	assert_true(k.kind == OTELPROF_RECORD_ALLOC && k.id == 7 && k.at == 0x1000);
	k = stack_park_key_of(&f);
	assert_true(k.kind == OTELPROF_RECORD_ALLOC && k.id == 7 && k.at == 0x1000);
	k = stack_park_key_of(&off);
	assert_true(k.kind == OTELPROF_RECORD_OFF_CPU && k.id == 9 && k.at == 55);
	k = stack_park_key_of(&end.end);
	assert_true(k.kind == OTELPROF_RECORD_OFF_CPU && k.id == 9 && k.at == 55);
}

static void test_pairs_in_order(void **state)
{
	static struct stack_park p;
	struct stack_park_key first = { OTELPROF_RECORD_OFF_CPU, 9, 55 }, second = { OTELPROF_RECORD_OFF_CPU, 9, 70 };
	union stack_closing end = end_of(9, 55, 60), got;

	(void)state;
	assert_false(stack_park_close(&p, &first, &end)); /* no stack waits: handled at once */
	assert_int_equal(stack_park_add(&p, &first, NULL), 0);
	assert_true(stack_park_has(&p, &second, true));   /* the thread's next stack goes behind it */
	assert_false(stack_park_has(&p, &second, false));
	assert_int_equal(stack_park_add(&p, &second, NULL), 0);
	assert_true(stack_park_close(&p, &first, &end));  /* held */
	assert_true(stack_park_take(&p, &first, &got));
	assert_int_equal(got.end.end_ns, 60);
	assert_false(stack_park_take(&p, &second, &got)); /* its end did not come */
	assert_int_equal(p.count, 0);
}

static void test_bounded(void **state)
{
	static struct stack_park p;
	union stack_closing c = end_of(1, 1, 2);

	(void)state;
	for (uint64_t i = 0; i < RECORD_REPLAY_MAX; i++)
		assert_int_equal(stack_park_add(&p, &(struct stack_park_key){ OTELPROF_RECORD_ALLOC, 3, i }, i ? NULL : &c), 0);
	assert_int_equal(stack_park_add(&p, &(struct stack_park_key){ OTELPROF_RECORD_ALLOC, 3, 999 }, NULL), -ENOSPC);
	/* A free of an address whose allocation already holds one pairs with nothing else. */
	assert_false(stack_park_close(&p, &(struct stack_park_key){ OTELPROF_RECORD_ALLOC, 3, 0 }, &c));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_pairs_in_order),
		cmocka_unit_test(test_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
