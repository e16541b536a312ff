// SPDX-License-Identifier: Apache-2.0
/*
 * What removed slots cost the allocation library's pointer set (alloc/sampled_set.h): removed slots
 * never become empty again, so after a long run a lookup of an absent pointer walks the whole
 * probe window (SAMPLED_SET_PROBES slots) rather than stopping at the first empty slot. Only a
 * free() the counting filter lets through looks in the slots at all. This times such lookups in a
 * fresh set and in one churned until no slot is empty, with the same live pointers.
 * Usage: set-probe [LIVE [LOOKUPS]]
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sampled_set.h"

#define SLOTS (1u << 16) /* libotelprofd-alloc.so's SET_SLOTS */

static _Atomic uintptr_t slots[SLOTS];
static struct sampled_set set;
static uint64_t rng = 88172645463325252ULL;

static uintptr_t random_pointer(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (uintptr_t)(0x7f0000000000ULL + ((rng >> 8) & 0xffffffffffULL)) & ~(uintptr_t)15;
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static size_t empty_slots(void)
{
	size_t n = 0;

	for (size_t i = 0; i < SLOTS; i++)
		n += atomic_load_explicit(&slots[i], memory_order_relaxed) == 0;
	return n;
}

/* ns per lookup of an absent pointer whose filter counter is set (it shares 64 bytes with a live
 * one: the only frees that reach the slots). */
static double absent_lookup_ns(const uintptr_t *live, size_t nlive, size_t lookups)
{
	size_t found = 0;
	double t0 = now_ns();

	for (size_t i = 0; i < lookups; i++)
		found += sampled_set_contains(&set, (const void *)(live[i % nlive] + 16));
	if (found)
		abort(); /* +16 is never a live pointer here */
	return (now_ns() - t0) / (double)lookups;
}

int main(int argc, char **argv)
{
	size_t nlive = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000;
	size_t lookups = argc > 2 ? strtoul(argv[2], NULL, 0) : 20000000;
	uintptr_t *live = calloc(nlive, sizeof(*live));
	size_t churned = 0;
	double fresh, worn;

	if (!live || !nlive)
		return 1;
	sampled_set_init(&set, slots, SLOTS);
	for (size_t i = 0; i < nlive; i++)
		while (!sampled_set_insert(&set, (const void *)(live[i] = random_pointer())))
			;
	fresh = absent_lookup_ns(live, nlive, lookups);
	printf("fresh set: %zu live, %zu of %u slots empty: %.1f ns per absent lookup past the filter\n", nlive,
	       empty_slots(), SLOTS, fresh);
	/* A long run: sampled pointers come and go until no slot is empty. */
	for (size_t i = 0; empty_slots() && churned < 100 * (size_t)SLOTS; i++) {
		for (size_t k = 0; k < SLOTS; k++, churned++) {
			uintptr_t p = random_pointer();

			if (sampled_set_insert(&set, (const void *)p))
				sampled_set_remove(&set, (const void *)p);
		}
	}
	worn = absent_lookup_ns(live, nlive, lookups);
	printf("after %zu sampled pointers came and went: %zu slots empty: %.1f ns per absent lookup past the "
	       "filter (+%.1f ns)\n", churned, empty_slots(), worn, worn - fresh);
	free(live);
	return 0;
}
