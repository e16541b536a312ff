// SPDX-License-Identifier: Apache-2.0
#include "sampled_set.h"

static size_t slot_of(const struct sampled_set *set, uintptr_t p)
{
	return (size_t)(sampled_set_hash(p) >> 20) & set->mask;
}

static _Atomic uint8_t *filter_of(struct sampled_set *set, uintptr_t p)
{
	return &set->filter[sampled_set_filter_index((const void *)p)];
}

static void filter_add(_Atomic uint8_t *c, int delta)
{
	uint8_t seen = atomic_load_explicit(c, memory_order_relaxed);

	while (seen != UINT8_MAX &&
	       !atomic_compare_exchange_weak_explicit(c, &seen, (uint8_t)(seen + delta), memory_order_relaxed,
						      memory_order_relaxed))
		;
}

void sampled_set_init(struct sampled_set *set, _Atomic uintptr_t *slots, size_t nslots)
{
	set->slots = slots;
	set->mask = nslots - 1;
	atomic_store_explicit(&set->live, 0, memory_order_relaxed);
	for (size_t i = 0; i < SAMPLED_SET_FILTER; i++)
		atomic_store_explicit(&set->filter[i], 0, memory_order_relaxed);
}

bool sampled_set_insert(struct sampled_set *set, const void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	size_t at = slot_of(set, p);

	if (p <= SAMPLED_SET_REMOVED)
		return false;
	/* Counted before the pointer is stored: a lookup never finds it with its counter at 0. */
	filter_add(filter_of(set, p), 1);
	for (size_t i = 0; i < SAMPLED_SET_PROBES; i++, at = (at + 1) & set->mask) {
		uintptr_t seen = atomic_load_explicit(&set->slots[at], memory_order_relaxed);

		if (seen > SAMPLED_SET_REMOVED)
			continue;
		if (atomic_compare_exchange_strong_explicit(&set->slots[at], &seen, p, memory_order_acq_rel,
							    memory_order_relaxed)) {
			atomic_fetch_add_explicit(&set->live, 1, memory_order_relaxed);
			return true;
		}
	}
	filter_add(filter_of(set, p), -1);
	return false;
}

void sampled_set_pin(struct sampled_set *set, const void *ptr)
{
	filter_add(filter_of(set, (uintptr_t)ptr), 1);
}

/* The slot holding ptr, or NULL. */
static _Atomic uintptr_t *find(struct sampled_set *set, uintptr_t p)
{
	size_t at = slot_of(set, p);

	if (p <= SAMPLED_SET_REMOVED || !sampled_set_maybe(set, (const void *)p))
		return NULL;
	for (size_t i = 0; i < SAMPLED_SET_PROBES; i++, at = (at + 1) & set->mask) {
		uintptr_t seen = atomic_load_explicit(&set->slots[at], memory_order_acquire);

		if (!seen)
			return NULL; /* never used: the probe sequence of p ends here */
		if (seen == p)
			return &set->slots[at];
	}
	return NULL;
}

bool sampled_set_contains(struct sampled_set *set, const void *ptr)
{
	return find(set, (uintptr_t)ptr) != NULL;
}

bool sampled_set_remove(struct sampled_set *set, const void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	_Atomic uintptr_t *slot = find(set, p);
	uintptr_t seen = p;

	/* Only p's own free() removes it: the exchange cannot fail but for a double free. */
	if (!slot || !atomic_compare_exchange_strong_explicit(slot, &seen, SAMPLED_SET_REMOVED, memory_order_acq_rel,
							       memory_order_relaxed))
		return false;
	atomic_fetch_sub_explicit(&set->live, 1, memory_order_relaxed);
	filter_add(filter_of(set, p), -1);
	return true;
}
