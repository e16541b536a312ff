// SPDX-License-Identifier: Apache-2.0
/* The live sampled allocations (daemon/sampling/heap.c): allocations and frees, what the in-use
 * aggregate holds, exits (of a process, of a program that exec'd), the table's bound and what it
 * counts. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "profile/aggregate.h"
#include "sampling/heap.h"

static struct otelprof_sample sample;

/* A sampled allocation of pid at ptr, size bytes standing for weight, its stack one frame at ip. */
static void alloc(struct heap *h, uint32_t pid, uint64_t instance, uint64_t ptr, uint64_t size, uint64_t weight,
		  uint64_t ip)
{
	struct otelprof_alloc a = { .ptr = ptr, .size = size, .weight = weight };

	memset(&sample, 0, sizeof(sample));
	sample.hdr = (struct otelprof_record_header){ .kind = OTELPROF_RECORD_ALLOC, .size = sizeof(sample) };
	sample.pid = sample.tid = pid;
	sample.process_start_ns = 1000 + pid;
	sample.time_ns = 5;
	sample.user_depth = 1;
	sample.user_ips[0] = ip;
	heap_alloc(h, &sample, instance, &a, 0);
}

static void release(struct heap *h, uint32_t pid, uint64_t ptr)
{
	struct otelprof_free f = { .hdr = { OTELPROF_RECORD_FREE, sizeof(f) }, .pid = pid, .start_ns = 1000 + pid,
				   .ptr = ptr };

	heap_release(h, &f);
}

/* Bytes and objects of the in-use aggregate built now. */
static void inuse(struct heap *h, uint64_t *bytes, uint64_t *objects)
{
	struct aggregate *agg = aggregate_new(&(struct agg_limits){ 1000, 1 << 20, 100000 });

	assert_non_null(agg);
	assert_int_equal(heap_add_inuse(h, agg), 0);
	*bytes = *objects = 0;
	for (size_t i = 0; i < aggregate_entry_count(agg); i++) {
		*bytes += aggregate_entry(agg, i)->value_sum;
		*objects += aggregate_entry(agg, i)->objects_sum;
	}
	aggregate_free(agg);
}

static void test_alloc_free_inuse(void **state)
{
	struct aggregate *allocs = aggregate_new(&(struct agg_limits){ 1000, 1 << 20, 100000 });
	struct heap *h = heap_new(&(struct heap_config){ .allocs = allocs, .max_live = 3 });
	uint64_t bytes, objects;

	(void)state;
	assert_non_null(h);
	alloc(h, 7, 1, 0x1000, 64, 16384, 0x400100);   /* 256 objects of 64 bytes */
	alloc(h, 7, 1, 0x2000, 40000, 45000, 0x400200); /* 1 object (45000 / 40000 rounds to 1) */
	alloc(h, 8, 1, 0x1000, 100, 20000, 0x400100);  /* another process, the same address */
	assert_int_equal(heap_counters(h)->allocs, 3);
	assert_int_equal(heap_counters(h)->alloc_bytes, 16384 + 45000 + 20000);
	inuse(h, &bytes, &objects);
	assert_int_equal(bytes, 16384 + 45000 + 20000);
	assert_int_equal(objects, 256 + 1 + 200);

	release(h, 7, 0x1000);
	release(h, 7, 0x9999); /* never sampled, or before the attach */
	assert_int_equal(heap_counters(h)->frees, 1);
	assert_int_equal(heap_counters(h)->unknown_frees, 1);
	inuse(h, &bytes, &objects);
	assert_int_equal(bytes, 45000 + 20000);

	/* The bound: a fourth live one is counted in the allocations, not kept live. */
	alloc(h, 7, 1, 0x3000, 64, 16384, 0x400100);
	alloc(h, 7, 1, 0x4000, 64, 16384, 0x400100);
	assert_int_equal(heap_counters(h)->live, 3);
	assert_int_equal(heap_counters(h)->live_full, 1);
	/* An address still live allocated again (its free lost): the older one is forgotten. */
	alloc(h, 7, 1, 0x3000, 128, 16384, 0x400100);
	assert_int_equal(heap_counters(h)->replaced, 1);
	assert_int_equal(heap_counters(h)->live, 3);
	assert_int_equal(aggregate_counters(allocs)->samples, 6);
	heap_free(h);
	aggregate_free(allocs);
}

static void test_exits(void **state)
{
	struct aggregate *allocs = aggregate_new(&(struct agg_limits){ 1000, 1 << 20, 100000 });
	struct heap *h = heap_new(&(struct heap_config){ .allocs = allocs });
	uint64_t bytes, objects;

	(void)state;
	alloc(h, 7, 1, 0x1000, 64, 1000, 0x400100);
	alloc(h, 8, 1, 0x1000, 64, 2000, 0x400100);
	alloc(h, 8, 2, 0x2000, 64, 4000, 0x400100); /* pid 8's next program, after an exec */
	heap_exit(h, 7, 1007);
	heap_exit_instance(h, 8, 1008, 1);
	/* The interval the processes left in shows what they held, the next one no more. */
	inuse(h, &bytes, &objects);
	assert_int_equal(bytes, 7000);
	inuse(h, &bytes, &objects);
	assert_int_equal(bytes, 4000);
	assert_int_equal(heap_counters(h)->exited, 2);
	assert_int_equal(heap_counters(h)->live_bytes, 4000);
	heap_free(h);
	aggregate_free(allocs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_free_inuse),
		cmocka_unit_test(test_exits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
