// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "profile/aggregate.h"
#include "sample-record.h"

static struct otelprof_sample make_sample(uint32_t pid, uint32_t tid, uint32_t cpu, uint64_t leaf)
{
	struct otelprof_sample s = sample_record(pid, tid, cpu, "worker", "app");

	s.user_depth = 3;
	s.user_ips[0] = leaf;
	s.user_ips[1] = 0x2000;
	s.user_ips[2] = 0x3000;
	return s;
}

static void test_dedup(void **state)
{
	struct agg_limits limits = { 100, 1 << 20, 1000 };
	struct aggregate *agg = aggregate_new(&limits);
	struct otelprof_sample a = make_sample(10, 11, 0, 0x1000), b = make_sample(10, 12, 0, 0x1000);

	assert_int_equal(aggregate_add(agg, &a, 5), 0);
	assert_int_equal(aggregate_add(agg, &a, 3), 0);
	assert_int_equal(aggregate_add(agg, &b, 4), 0);
	assert_int_equal(aggregate_entry_count(agg), 2);
	assert_int_equal(aggregate_entry(agg, 0)->count, 2);
	assert_int_equal(aggregate_entry(agg, 0)->stack_id, aggregate_entry(agg, 1)->stack_id);
	assert_string_equal(aggregate_entry(agg, 0)->process_comm, "app");
	{
		uint64_t first, last;

		assert_true(aggregate_time_range(agg, &first, &last));
		assert_int_equal(first, 3);
		assert_int_equal(last, 5);
	}
	aggregate_reset(agg);
	assert_int_equal(aggregate_entry_count(agg), 0);
	assert_int_equal(aggregate_add(agg, &a, 1), 0);
	assert_int_equal(aggregate_entry_count(agg), 1);
	aggregate_free(agg);
}

static void test_kernel_and_user(void **state)
{
	struct agg_limits limits = { 100, 1 << 20, 1000 };
	struct aggregate *agg = aggregate_new(&limits);
	struct otelprof_sample s = make_sample(1, 1, 0, 0x1000);
	const struct agg_stack *st;

	s.kernel_depth = 2;
	s.kernel_ips[0] = 0xffffffff81000010ULL;
	s.kernel_ips[1] = 0xffffffff81000020ULL;
	assert_int_equal(aggregate_add(agg, &s, 1), 0);
	st = aggregate_stack(agg, aggregate_entry(agg, 0)->stack_id);
	assert_int_equal(st->kernel_depth, 2);
	assert_int_equal(st->user_depth, 3);
	assert_true(st->kernel_mode);
	assert_int_equal(st->ips[0], 0xffffffff81000010ULL);
	assert_int_equal(st->ips[2], 0x1000);
	aggregate_free(agg);
}

static void test_bounds(void **state)
{
	struct agg_limits limits = { 4, 1 << 20, 6 };
	struct aggregate *agg = aggregate_new(&limits);

	for (uint64_t i = 0; i < 4; i++) {
		struct otelprof_sample s = make_sample(1, 1, 0, 0x1000 + i);

		assert_int_equal(aggregate_add(agg, &s, i + 1), 0);
	}
	{
		struct otelprof_sample s = make_sample(1, 1, 0, 0x9000);

		assert_int_equal(aggregate_add(agg, &s, 9), -ENOSPC);
		assert_int_equal(aggregate_counters(agg)->dropped_entries, 1);
	}
	{
		struct otelprof_sample s = make_sample(1, 1, 0, 0x1000);

		assert_int_equal(aggregate_add(agg, &s, 10), 0);
		assert_int_equal(aggregate_add(agg, &s, 11), 0);
		assert_int_equal(aggregate_add(agg, &s, 12), -ENOSPC);
		assert_int_equal(aggregate_counters(agg)->dropped_samples, 1);
	}
	{
		struct otelprof_sample s = make_sample(1, 1, 0, 0x1000);

		s.user_depth = OTELPROF_MAX_STACK_DEPTH + 1;
		assert_int_equal(aggregate_add(agg, &s, 1), -EINVAL);
		assert_int_equal(aggregate_counters(agg)->malformed, 1);
	}
	aggregate_free(agg);

	/* The byte bound on interned stacks. */
	limits = (struct agg_limits){ 1000, 200, 1000 };
	agg = aggregate_new(&limits);
	{
		struct otelprof_sample s = make_sample(1, 1, 0, 0x1000);
		int ok = 0;

		for (int i = 0; i < 10; i++) {
			s.user_ips[0] = 0x1000 + i;
			ok += aggregate_add(agg, &s, 1) == 0;
		}
		assert_true(ok < 10);
		assert_int_equal(aggregate_counters(agg)->dropped_stack_bytes, 10 - ok);
	}
	aggregate_free(agg);
}

/* A sample kept 1 in 4 over the CPU ceiling counts 4, at its time; past max_samples, the rest is
 * dropped and counted. */
static void test_repeat_last(void **state)
{
	struct agg_limits limits = { 100, 1 << 20, 6 };
	struct aggregate *agg = aggregate_new(&limits);
	struct otelprof_sample s = make_sample(1, 1, 0, 0x1000);
	const struct agg_entry *e;

	(void)state;
	assert_non_null(agg);
	aggregate_repeat_last(agg, 3); /* nothing added yet: nothing to repeat */
	assert_int_equal(aggregate_counters(agg)->samples, 0);
	assert_int_equal(aggregate_add(agg, &s, 100), 0);
	aggregate_repeat_last(agg, 3);
	e = aggregate_entry(agg, 0);
	assert_int_equal(e->count, 4);
	assert_int_equal(e->ntimestamps, 4);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(e->timestamps[i], 100);
	assert_int_equal(aggregate_add(agg, &s, 200), 0);
	aggregate_repeat_last(agg, 3); /* room for one more only */
	e = aggregate_entry(agg, 0);
	assert_int_equal(e->count, 6);
	assert_int_equal(e->timestamps[5], 200);
	assert_int_equal(aggregate_counters(agg)->samples, 6);
	assert_int_equal(aggregate_counters(agg)->dropped_samples, 2);
	aggregate_free(agg);
}

static void test_many(void **state)
{
	struct agg_limits limits = { 100000, 64 << 20, 1000000 };
	struct aggregate *agg = aggregate_new(&limits);

	for (uint64_t i = 0; i < 50000; i++) {
		struct otelprof_sample s = make_sample((uint32_t)(i % 97), (uint32_t)(i % 13), (uint32_t)(i % 2), i % 5000);

		assert_int_equal(aggregate_add(agg, &s, i), 0);
	}
	assert_int_equal(aggregate_counters(agg)->samples, 50000);
	{
		uint64_t total = 0;

		for (size_t i = 0; i < aggregate_entry_count(agg); i++)
			total += aggregate_entry(agg, i)->count;
		assert_int_equal(total, 50000);
	}
	aggregate_free(agg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dedup),
		cmocka_unit_test(test_kernel_and_user),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_repeat_last),
		cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
