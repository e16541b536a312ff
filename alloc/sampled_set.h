/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pointers of sampled allocations that are still live, so that free() fires its probe for them
 * alone. Lock-free (compare-and-swap on each slot), allocation-free (the caller provides the slots,
 * a static array in libotelprofd-alloc.so) and bounded: a pointer is looked for in at most
 * SAMPLED_SET_PROBES slots from its hash, so a full neighbourhood drops the insertion (counted by
 * the caller). In front of the slots, a counting filter (SAMPLED_SET_FILTER 8-bit counters, 32 KiB):
 * a pointer whose counter is 0 is not in the set, so an unsampled free() costs a shift, a mask and
 * one load of the filter, not a miss in the slots' 512 KiB. A free() whose counter another live
 * sampled pointer holds up pays that miss: a share of the frees about live sampled pointers /
 * SAMPLED_SET_FILTER (with 16-bit counters in 16 KiB, 8,192 of them, that was 4.5% of the tree
 * benchmark's CPU at the default mean: bench/RESULTS.md, alloc28).
 *
 * A pointer is inserted before its allocation returns and removed by its free(): one pointer is
 * never inserted twice at the same time, which is what makes reusing removed slots safe.
 */
#ifndef OTELPROFD_ALLOC_SAMPLED_SET_H
#define OTELPROFD_ALLOC_SAMPLED_SET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SAMPLED_SET_PROBES 32
#define SAMPLED_SET_FILTER 32768
#define SAMPLED_SET_REMOVED ((uintptr_t)1)

struct sampled_set {
	/* Pointers in the set by their filter index (sampled_set_filter_index()); one that reached
	 * UINT8_MAX stays there (its index then always says "maybe"; 255 live sampled pointers in
	 * addresses 2 MiB apart). First: free() addresses it from the set's own address. */
	_Atomic uint8_t filter[SAMPLED_SET_FILTER];
	_Atomic uintptr_t *slots; /* 0: empty; SAMPLED_SET_REMOVED: was used; else a pointer */
	size_t mask;              /* slots - 1 (a power of two) */
	_Atomic size_t live;      /* pointers in the set */
};


/* Allocations are 16-byte aligned: the low bits say nothing. Fibonacci hashing of the rest (the
 * slots). */
static inline uint64_t sampled_set_hash(uintptr_t p)
{
	return (uint64_t)(p >> 4) * 0x9e3779b97f4a7c15ULL;
}

/* A pointer's counter in the filter: its address in 64-byte units, modulo the filter (2 MiB of
 * address space). No hash: free() pays a shift and a mask. Heap blocks spread evenly over that;
 * blocks within the same 64 bytes share a counter, so a free of a sampled block's neighbour costs a
 * look in the slots. Units of 16 bytes (the alignment) left three counters in four unused for
 * 64-byte blocks, so four times the neighbours' looks: callgrind's D1 read misses +2.7% on the tree
 * benchmark, against -0.4% with 64-byte units (the multiplicative hash: two instructions more, the
 * same misses). */
static inline size_t sampled_set_filter_index(const void *ptr)
{
	return ((uintptr_t)ptr >> 6) & (SAMPLED_SET_FILTER - 1);
}

/* The pointer may be in the set (its filter counter is not 0); false: it is not (0 and 1 never
 * are, whatever this says). Inlined into free(): a shift, a mask and a load. */
static inline bool sampled_set_maybe(struct sampled_set *set, const void *ptr)
{
	return atomic_load_explicit(&set->filter[sampled_set_filter_index(ptr)], memory_order_relaxed);
}

/* nslots: a power of two; slots zeroed. */
void sampled_set_init(struct sampled_set *set, _Atomic uintptr_t *slots, size_t nslots);
/* false: no free slot near the pointer's hash (or ptr is 0 or 1). */
bool sampled_set_insert(struct sampled_set *set, const void *ptr);
/* Make sampled_set_maybe() say "maybe" for ptr from now on, without putting it in the set (a block
 * its caller must always look at: libotelprofd-alloc.so's bootstrap arena, so free() needs no other
 * test). Never undone. */
void sampled_set_pin(struct sampled_set *set, const void *ptr);
/* true when ptr is in the set (it stays). */
bool sampled_set_contains(struct sampled_set *set, const void *ptr);
/* true when ptr was in the set (it is removed). */
bool sampled_set_remove(struct sampled_set *set, const void *ptr);

#endif
