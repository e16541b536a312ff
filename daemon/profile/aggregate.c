// SPDX-License-Identifier: Apache-2.0
#include "profile/aggregate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/intern.h"

/* Open-addressing index of element numbers (stored +1 so that 0 marks an empty slot). */
struct index {
	uint32_t *slots;
	size_t capacity; /* power of two, or 0 */
};

struct aggregate {
	struct agg_limits limits;
	struct agg_counters counters;

	struct agg_stack **stacks;
	size_t nstacks, stacks_capacity, stack_bytes;
	struct index stack_index;

	struct agg_entry *entries;
	size_t nentries, entries_capacity;
	struct index entry_index;

	size_t interval_samples;
	size_t sample_bytes; /* the interval's timestamp and value arrays, by their capacity */
	uint64_t first_time, last_time;
	struct intern *links; /* the interval's links (AGG_LINK format), or NULL before the first */
	struct agg_entry *last_entry; /* the entry of the last sample added, for aggregate_add_value() */
};

/* What a link costs the aggregate, about: its ids and a few attributes, the intern entry and slot. */
#define AGG_LINK_BYTES_EACH 128

static uint64_t mix64(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	return h;
}

_Static_assert(sizeof(struct agg_entry) == 120, "an aggregate entry packs without padding");

/* Tables start at 16 elements; an entry's timestamps at 2: host-wide, most entries (a thread, a CPU,
 * a stack) hold one or two samples, and 16 timestamps were 144 bytes of heap for each of them. */
#define AGG_TABLE_FIRST 16
#define AGG_TIMESTAMPS_FIRST 2

static int grow_array(void **array, size_t *capacity, size_t needed, size_t elem, size_t first)
{
	size_t cap = *capacity ? *capacity : first;
	void *p;

	if (needed <= *capacity)
		return 0;
	while (cap < needed)
		cap *= 2;
	p = realloc(*array, cap * elem);
	if (!p)
		return -ENOMEM;
	*array = p;
	*capacity = cap;
	return 0;
}

/* Room for needed timestamps in e (its capacity is 32-bit: an interval's samples are far fewer). */
static int grow_timestamps(struct agg_entry *e, size_t needed)
{
	size_t cap = e->capacity;
	int r;

	if (needed > UINT32_MAX)
		return -ENOMEM;
	r = grow_array((void **)&e->timestamps, &cap, needed, sizeof(uint64_t), AGG_TIMESTAMPS_FIRST);
	if (!r)
		e->capacity = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
	return r;
}

/* Make room for one more element when the index is over 70% full. */
static int index_reserve(struct index *ix, size_t count, uint32_t (*hash_of)(const struct aggregate *, uint32_t),
			 const struct aggregate *agg)
{
	size_t cap, mask;
	uint32_t *slots;

	if (ix->capacity && (count + 1) * 10 < ix->capacity * 7)
		return 0;
	cap = ix->capacity ? ix->capacity * 2 : 64;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	mask = cap - 1;
	for (size_t i = 0; i < count; i++) {
		size_t s = hash_of(agg, (uint32_t)i) & mask;

		while (slots[s])
			s = (s + 1) & mask;
		slots[s] = (uint32_t)i + 1;
	}
	free(ix->slots);
	ix->slots = slots;
	ix->capacity = cap;
	return 0;
}

static uint32_t stack_hash_of(const struct aggregate *agg, uint32_t i)
{
	return agg->stacks[i]->hash;
}

/* Start time and instance in one hash input. */
static uint64_t process_key(uint64_t start_ns, uint64_t instance)
{
	return start_ns ^ (instance * 0x9e3779b97f4a7c15ULL);
}

static uint32_t entry_hash(uint32_t pid, uint64_t start, uint32_t tid, uint32_t cpu, uint32_t stack_id)
{
	uint64_t h = mix64(mix64(mix64(0, start), ((uint64_t)pid << 32) | tid), ((uint64_t)cpu << 32) | stack_id);

	return (uint32_t)(h ^ (h >> 32));
}

/* The stack and the link in one hash input. */
static uint32_t stack_link(uint32_t stack_id, uint32_t link)
{
	return stack_id ^ (link * 0x9e3779b1u);
}

static uint32_t entry_hash_of(const struct aggregate *agg, uint32_t i)
{
	const struct agg_entry *e = &agg->entries[i];

	return entry_hash(e->pid, process_key(e->process_start_ns, e->process_instance), e->tid, e->cpu,
			  stack_link(e->stack_id, e->link));
}

struct aggregate *aggregate_new(const struct agg_limits *limits)
{
	struct aggregate *agg = calloc(1, sizeof(*agg));

	if (!agg)
		return NULL;
	agg->limits = *limits;
	return agg;
}

static void free_interval(struct aggregate *agg)
{
	for (size_t i = 0; i < agg->nstacks; i++)
		free(agg->stacks[i]);
	for (size_t i = 0; i < agg->nentries; i++) {
		free(agg->entries[i].timestamps);
		free(agg->entries[i].values);
	}
}

/* The tables' arrays and indexes let go: the interval swapped in next (aggregate_swap_interval())
 * would otherwise start with the capacity, and the touched pages, of the largest one before it. */
static void free_tables(struct aggregate *agg)
{
	free(agg->stacks);
	free(agg->entries);
	free(agg->stack_index.slots);
	free(agg->entry_index.slots);
	agg->stacks = NULL;
	agg->entries = NULL;
	agg->stacks_capacity = agg->entries_capacity = 0;
	agg->stack_index = (struct index){ 0 };
	agg->entry_index = (struct index){ 0 };
	agg->last_entry = NULL;
}

void aggregate_free(struct aggregate *agg)
{
	if (!agg)
		return;
	free_interval(agg);
	free_tables(agg);
	intern_free(agg->links);
	free(agg);
}

void aggregate_swap_interval(struct aggregate *a, struct aggregate *b)
{
	struct aggregate t = *a;
	struct agg_counters bc = b->counters;
	struct agg_limits bl = b->limits;

	*a = *b;
	a->counters = t.counters;
	a->limits = t.limits;
	*b = t;
	b->counters = bc;
	b->limits = bl;
}

void aggregate_reset(struct aggregate *agg)
{
	free_interval(agg);
	free_tables(agg);
	agg->nstacks = 0;
	agg->stack_bytes = 0;
	agg->nentries = 0;
	agg->interval_samples = 0;
	agg->sample_bytes = 0;
	agg->first_time = agg->last_time = 0;
	intern_free(agg->links);
	agg->links = NULL;
}

/* Interned id of the sample's stack, or a negative errno (the caller counts it). */
static int64_t intern_stack(struct aggregate *agg, const struct otelprof_sample *s)
{
	size_t n = (size_t)s->kernel_depth + s->user_depth, bytes = sizeof(struct agg_stack) + n * 8;
	bool kernel_mode = s->kernel_depth > 0;
	bool truncated = (s->flags & OTELPROF_SAMPLE_USER_TRUNCATED) != 0;
	uint64_t h = mix64(kernel_mode | (uint64_t)truncated << 1, ((uint64_t)s->kernel_depth << 16) | s->user_depth);
	struct agg_stack *st;
	size_t mask, slot;

	for (size_t i = 0; i < s->kernel_depth; i++)
		h = mix64(h, s->kernel_ips[i]);
	for (size_t i = 0; i < s->user_depth; i++)
		h = mix64(h, s->user_ips[i]);

	if (agg->stack_index.capacity) {
		mask = agg->stack_index.capacity - 1;
		for (slot = h & mask; agg->stack_index.slots[slot]; slot = (slot + 1) & mask) {
			st = agg->stacks[agg->stack_index.slots[slot] - 1];
			if (st->hash == (uint32_t)h && st->kernel_depth == s->kernel_depth &&
			    st->user_depth == s->user_depth && st->user_truncated == truncated &&
			    !memcmp(st->ips, s->kernel_ips, s->kernel_depth * 8) &&
			    !memcmp(st->ips + s->kernel_depth, s->user_ips, s->user_depth * 8))
				return agg->stack_index.slots[slot] - 1;
		}
	}

	if (agg->stack_bytes + bytes > agg->limits.max_stack_bytes)
		return -ENOSPC;
	if (agg->nstacks >= agg->limits.max_entries)
		return -EXFULL;
	if (index_reserve(&agg->stack_index, agg->nstacks, stack_hash_of, agg) ||
	    grow_array((void **)&agg->stacks, &agg->stacks_capacity, agg->nstacks + 1, sizeof(*agg->stacks),
		       AGG_TABLE_FIRST))
		return -ENOMEM;
	st = malloc(bytes);
	if (!st)
		return -ENOMEM;
	st->hash = (uint32_t)h;
	st->kernel_depth = s->kernel_depth;
	st->user_depth = s->user_depth;
	st->kernel_mode = kernel_mode;
	st->user_truncated = truncated;
	memcpy(st->ips, s->kernel_ips, s->kernel_depth * 8);
	memcpy(st->ips + s->kernel_depth, s->user_ips, s->user_depth * 8);

	mask = agg->stack_index.capacity - 1;
	for (slot = st->hash & mask; agg->stack_index.slots[slot]; slot = (slot + 1) & mask)
		;
	agg->stack_index.slots[slot] = (uint32_t)agg->nstacks + 1;
	agg->stacks[agg->nstacks] = st;
	agg->stack_bytes += bytes;
	return agg->nstacks++;
}

static struct agg_entry *find_or_add_entry(struct aggregate *agg, const struct otelprof_sample *s,
					    uint64_t instance, uint32_t stack_id, uint32_t link, int *err)
{
	uint32_t h = entry_hash(s->pid, process_key(s->process_start_ns, instance), s->tid, s->cpu,
				stack_link(stack_id, link));
	struct agg_entry *e;
	size_t mask, slot;

	if (agg->entry_index.capacity) {
		mask = agg->entry_index.capacity - 1;
		for (slot = h & mask; agg->entry_index.slots[slot]; slot = (slot + 1) & mask) {
			e = &agg->entries[agg->entry_index.slots[slot] - 1];
			if (e->pid == s->pid && e->process_start_ns == s->process_start_ns &&
			    e->process_instance == instance && e->tid == s->tid &&
			    e->cpu == s->cpu && e->stack_id == stack_id && e->link == link)
				return e;
		}
	}
	if (agg->nentries >= agg->limits.max_entries) {
		*err = -EXFULL;
		return NULL;
	}
	if (index_reserve(&agg->entry_index, agg->nentries, entry_hash_of, agg) ||
	    grow_array((void **)&agg->entries, &agg->entries_capacity, agg->nentries + 1,
		       sizeof(*agg->entries), AGG_TABLE_FIRST)) {
		*err = -ENOMEM;
		return NULL;
	}
	e = &agg->entries[agg->nentries];
	*e = (struct agg_entry){
		.pid = s->pid, .process_start_ns = s->process_start_ns, .process_instance = instance,
		.tid = s->tid, .cpu = s->cpu,
		.stack_id = stack_id, .link = link,
	};
	mask = agg->entry_index.capacity - 1;
	for (slot = h & mask; agg->entry_index.slots[slot]; slot = (slot + 1) & mask)
		;
	agg->entry_index.slots[slot] = (uint32_t)agg->nentries + 1;
	agg->nentries++;
	return e;
}

static void count_drop(struct aggregate *agg, int err)
{
	switch (err) {
	case -EXFULL:
		agg->counters.dropped_entries++;
		break;
	case -ENOSPC:
		agg->counters.dropped_stack_bytes++;
		break;
	default:
		agg->counters.dropped_nomem++;
		break;
	}
}

int aggregate_add(struct aggregate *agg, const struct otelprof_sample *s, uint64_t time_unix_ns)
{
	return aggregate_add_instance(agg, s, 0, time_unix_ns);
}

int aggregate_add_instance(struct aggregate *agg, const struct otelprof_sample *s, uint64_t process_instance,
			   uint64_t time_unix_ns)
{
	return aggregate_add_linked(agg, s, process_instance, time_unix_ns, NULL, 0);
}

/* Id + 1 of the link (0: none, or the table is full: counted, the sample is kept unlinked). */
static uint32_t intern_link(struct aggregate *agg, const uint8_t *link, size_t len)
{
	int64_t id;

	if (!len)
		return 0;
	if (len < AGG_LINK_IDS || len > AGG_LINK_MAX) {
		agg->counters.malformed++;
		return 0;
	}
	if (!agg->links)
		agg->links = intern_new(agg->limits.max_entries);
	id = agg->links ? intern_put(agg->links, link, len, NULL) : -ENOMEM;
	if (id < 0) {
		agg->counters.dropped_links++;
		return 0;
	}
	return (uint32_t)id + 1;
}

int aggregate_add_linked(struct aggregate *agg, const struct otelprof_sample *s, uint64_t process_instance,
			 uint64_t time_unix_ns, const uint8_t *link, size_t link_len)
{
	struct agg_entry *e;
	int64_t stack_id;
	size_t capacity;
	int err = 0;

	if (s->kernel_depth > OTELPROF_MAX_STACK_DEPTH || s->user_depth > OTELPROF_MAX_STACK_DEPTH) {
		agg->counters.malformed++;
		return -EINVAL;
	}
	if (agg->interval_samples >= agg->limits.max_samples) {
		agg->counters.dropped_samples++;
		return -ENOSPC;
	}
	stack_id = intern_stack(agg, s);
	if (stack_id < 0) {
		count_drop(agg, (int)stack_id);
		return (int)stack_id == -ENOMEM ? -ENOMEM : -ENOSPC;
	}
	e = find_or_add_entry(agg, s, process_instance, (uint32_t)stack_id, intern_link(agg, link, link_len), &err);
	if (!e) {
		count_drop(agg, err);
		return err == -ENOMEM ? -ENOMEM : -ENOSPC;
	}
	capacity = e->capacity;
	if (grow_timestamps(e, (size_t)e->ntimestamps + 1)) {
		agg->counters.dropped_nomem++;
		return -ENOMEM;
	}
	agg->sample_bytes += (e->capacity - capacity) * sizeof(uint64_t);
	e->timestamps[e->ntimestamps++] = time_unix_ns;
	e->count++;
	memcpy(e->comm, s->comm, sizeof(e->comm));
	e->comm[sizeof(e->comm) - 1] = 0;
	memcpy(e->process_comm, s->process_comm, sizeof(e->process_comm));
	e->process_comm[sizeof(e->process_comm) - 1] = 0;
	if (!agg->first_time || time_unix_ns < agg->first_time)
		agg->first_time = time_unix_ns;
	if (time_unix_ns > agg->last_time)
		agg->last_time = time_unix_ns;
	agg->counters.samples++;
	agg->interval_samples++;
	agg->last_entry = e;
	return 0;
}

void aggregate_repeat_last(struct aggregate *agg, uint64_t times)
{
	struct agg_entry *e = agg->last_entry;
	uint64_t room = agg->limits.max_samples - agg->interval_samples;

	if (!e || !e->ntimestamps || e->values || !times)
		return; /* valued samples carry their weight in their values */
	if (times > room) {
		agg->counters.dropped_samples += times - room;
		times = room;
	}
	if (grow_timestamps(e, (size_t)e->ntimestamps + times)) {
		agg->counters.dropped_nomem += times;
		return;
	}
	for (uint64_t i = 0; i < times; i++)
		e->timestamps[e->ntimestamps + i] = e->timestamps[e->ntimestamps - 1];
	e->ntimestamps += times;
	e->count += times;
	agg->counters.samples += times;
	agg->interval_samples += times;
}

int aggregate_add_value(struct aggregate *agg, const struct otelprof_sample *s, uint64_t process_instance,
			uint64_t time_unix_ns, uint64_t value)
{
	struct agg_entry *e;
	uint64_t *values;
	int r = aggregate_add_instance(agg, s, process_instance, time_unix_ns);

	if (r)
		return r;
	e = agg->last_entry;
	/* Values grow with timestamps, when they did (a realloc per wait was a call per record). */
	values = e->values_capacity == e->capacity ? e->values : realloc(e->values, e->capacity * sizeof(*values));
	if (!values) {
		/* Undo the timestamp so both arrays keep one length. */
		e->ntimestamps--;
		e->count--;
		agg->counters.samples--;
		agg->interval_samples--;
		agg->counters.dropped_nomem++;
		return -ENOMEM;
	}
	agg->sample_bytes += (e->capacity - e->values_capacity) * sizeof(*values);
	e->values = values;
	e->values_capacity = e->capacity;
	e->values[e->ntimestamps - 1] = value;
	e->value_sum += value;
	return 0;
}

int aggregate_add_heap(struct aggregate *agg, const struct otelprof_sample *s, uint64_t process_instance,
		       uint64_t time_unix_ns, uint64_t bytes, uint64_t objects)
{
	int r = aggregate_add_value(agg, s, process_instance, time_unix_ns, bytes);

	if (!r)
		agg->last_entry->objects_sum += objects;
	return r;
}

size_t aggregate_entry_count(const struct aggregate *agg)
{
	return agg->nentries;
}

const struct agg_entry *aggregate_entry(const struct aggregate *agg, size_t i)
{
	return i < agg->nentries ? &agg->entries[i] : NULL;
}

const struct agg_stack *aggregate_stack(const struct aggregate *agg, uint32_t stack_id)
{
	return stack_id < agg->nstacks ? agg->stacks[stack_id] : NULL;
}

const struct agg_counters *aggregate_counters(const struct aggregate *agg)
{
	return &agg->counters;
}

void aggregate_count_dropped_at_build(struct aggregate *agg, uint64_t samples)
{
	agg->counters.dropped_at_build += samples;
}

size_t aggregate_link_count(const struct aggregate *agg)
{
	return agg->links ? intern_count(agg->links) : 0;
}

const uint8_t *aggregate_link(const struct aggregate *agg, uint32_t id, size_t *len)
{
	if (!agg->links || id >= intern_count(agg->links))
		return NULL;
	return intern_key(agg->links, id, len);
}

size_t aggregate_bytes(const struct aggregate *agg)
{
	/* The interval's own: the tables' capacity stays from one interval to the next. */
	return agg->stack_bytes + agg->sample_bytes + agg->nstacks * sizeof(*agg->stacks) +
	       agg->nentries * (sizeof(*agg->entries) + 2 * sizeof(uint32_t)) +
	       aggregate_link_count(agg) * AGG_LINK_BYTES_EACH;
}

bool aggregate_over_budget(struct aggregate *agg, size_t budget)
{
	agg->counters.bytes = aggregate_bytes(agg);
	if (agg->counters.bytes <= budget)
		return false;
	agg->counters.ended_early++;
	return true;
}

bool aggregate_time_range(const struct aggregate *agg, uint64_t *first, uint64_t *last)
{
	if (!agg->nentries)
		return false;
	*first = agg->first_time;
	*last = agg->last_time;
	return true;
}
