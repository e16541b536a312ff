// SPDX-License-Identifier: Apache-2.0
/* sort_u64(): the same order as a comparison sort by (key, original position), so ascending and
 * stable, for sizes on both sides of the radix threshold, keys differing in low, high or all bytes,
 * many equal keys, and records of an odd size with the key not first. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sort_u64.h"

struct rec {
	uint32_t seq;
	uint64_t key;
	char pad[5];
} __attribute__((packed));

static int by_key_then_seq(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void check(size_t n, uint64_t mask, uint64_t base)
{
	struct rec *a = calloc(n + 1, sizeof(*a)), *b = calloc(n + 1, sizeof(*b));
	uint64_t seed = 0x9e3779b97f4a7c15ULL ^ n ^ mask;

	assert_non_null(a);
	assert_non_null(b);
	for (size_t i = 0; i < n; i++) {
		a[i].seq = (uint32_t)i;
		a[i].key = base + (next(&seed) & mask);
		memset(a[i].pad, (int)i, sizeof(a[i].pad));
	}
	memcpy(b, a, n * sizeof(*a));
	sort_u64(a, n, sizeof(*a), offsetof(struct rec, key));
	qsort(b, n, sizeof(*b), by_key_then_seq);
	assert_memory_equal(a, b, n * sizeof(*a));
	free(a);
	free(b);
}

static void test_orders(void **state)
{
	const size_t sizes[] = { 0, 1, 2, 255, 256, 257, 5000, 100000 };
	const uint64_t masks[] = { 0xf, 0xffff, 0xffffffffULL, ~0ULL, 0xff00000000ULL };

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (size_t j = 0; j < sizeof(masks) / sizeof(masks[0]); j++) {
			check(sizes[i], masks[j], 0);
			check(sizes[i], masks[j], 0xffffffff80000000ULL); /* kernel addresses */
		}
	check(1000, 0, 42); /* every key the same: the input order */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_orders),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
