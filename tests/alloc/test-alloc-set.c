// SPDX-License-Identifier: Apache-2.0
/* The sampled-pointer set (alloc/sampled_set.h): membership, reuse of removed slots, its bound, and
 * threads inserting and removing their own pointers at once. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "sampled_set.h"

#define SLOTS 1024
static _Atomic uintptr_t slots[SLOTS];

static void reset(struct sampled_set *set)
{
	memset(slots, 0, sizeof(slots));
	sampled_set_init(set, slots, SLOTS);
}

static void test_membership(void **state)
{
	struct sampled_set set;

	(void)state;
	reset(&set);
	assert_false(sampled_set_remove(&set, (void *)0x1000)); /* empty: one load */
	assert_true(sampled_set_insert(&set, (void *)0x1000));
	assert_true(sampled_set_insert(&set, (void *)0x2000));
	assert_int_equal(set.live, 2);
	assert_false(sampled_set_remove(&set, (void *)0x3000));
	assert_true(sampled_set_remove(&set, (void *)0x1000));
	assert_false(sampled_set_remove(&set, (void *)0x1000)); /* a double free fires once */
	assert_true(sampled_set_remove(&set, (void *)0x2000));
	assert_int_equal(set.live, 0);
	assert_false(sampled_set_insert(&set, NULL));
	assert_false(sampled_set_insert(&set, (void *)SAMPLED_SET_REMOVED));
	/* A pinned pointer: always "maybe", never in the set, whatever its neighbours do. */
	assert_false(sampled_set_maybe(&set, (void *)0x4000));
	sampled_set_pin(&set, (void *)0x4000);
	assert_true(sampled_set_maybe(&set, (void *)0x4000));
	assert_false(sampled_set_contains(&set, (void *)0x4000));
	assert_false(sampled_set_remove(&set, (void *)0x4000));
	assert_true(sampled_set_insert(&set, (void *)0x4000));
	assert_true(sampled_set_contains(&set, (void *)0x4000));
	assert_true(sampled_set_remove(&set, (void *)0x4000));
	assert_false(sampled_set_contains(&set, (void *)0x4000));
	assert_true(sampled_set_maybe(&set, (void *)0x4000));
	assert_int_equal(set.live, 0);
}

/* Far more pointers than slots, inserted and removed in turn: removed slots are reused, and a
 * full neighbourhood refuses an insertion instead of looking further. */
static void test_bound_and_reuse(void **state)
{
	struct sampled_set set;
	size_t in = 0, refused = 0;

	(void)state;
	reset(&set);
	for (uintptr_t i = 1; i <= 100000; i++) {
		void *p = (void *)(i * 16);

		assert_true(sampled_set_insert(&set, p));
		assert_true(sampled_set_remove(&set, p));
	}
	for (uintptr_t i = 1; i <= 2 * SLOTS; i++) {
		if (sampled_set_insert(&set, (void *)(i * 16)))
			in++;
		else
			refused++;
	}
	assert_int_equal(in + refused, 2 * SLOTS);
	assert_true(in <= SLOTS && in > SLOTS / 2);
	assert_int_equal(set.live, in);
	for (uintptr_t i = 1; i <= 2 * SLOTS; i++)
		sampled_set_remove(&set, (void *)(i * 16));
	assert_int_equal(set.live, 0);
}

struct worker {
	struct sampled_set *set;
	uintptr_t base;
	size_t inserted, removed;
};

static void *work(void *arg)
{
	struct worker *w = arg;

	for (int round = 0; round < 200; round++) {
		for (uintptr_t i = 0; i < 64; i++)
			w->inserted += sampled_set_insert(w->set, (void *)(w->base + i * 16));
		for (uintptr_t i = 0; i < 64; i++)
			w->removed += sampled_set_remove(w->set, (void *)(w->base + i * 16));
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct sampled_set set;
	struct worker w[4];
	pthread_t t[4];

	(void)state;
	reset(&set);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .set = &set, .base = (uintptr_t)(i + 1) << 32 };
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].inserted, w[i].removed);
		assert_true(w[i].inserted > 200 * 60);
	}
	assert_int_equal(set.live, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_membership),
		cmocka_unit_test(test_bound_and_reuse),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
