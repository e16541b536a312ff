// SPDX-License-Identifier: Apache-2.0
#include "sampling/heap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profile/aggregate.h"

/* Exits remembered before a sweep of the table is forced. */
#define MAX_EXITED 4096

/* One live sampled allocation and what its in-use sample needs: the sample's header and user stack. */
struct live {
	struct live *next;     /* in its bucket */
	uint64_t start_ns;     /* the process's start: with pid, its identity */
	uint64_t ptr;
	uint64_t instance;
	uint64_t time_unix_ns; /* when it was allocated */
	uint64_t bytes, objects;
	uint32_t pid, tid, cpu, flags;
	char comm[OTELPROF_COMM_LEN], process_comm[OTELPROF_COMM_LEN];
	uint16_t user_depth;
	uint64_t ips[];        /* user_depth user frames, leaf first */
};

struct proc_key {
	uint32_t pid;
	uint64_t start_ns;
	uint64_t instance; /* ANY_INSTANCE: every program of the process */
};

#define ANY_INSTANCE UINT64_MAX

struct heap {
	struct aggregate *allocs;
	size_t max_live;
	struct live **buckets;
	size_t nbuckets;           /* a power of two >= max_live */
	struct proc_key *exited;   /* processes gone since the last sweep */
	size_t nexited;
	struct otelprof_sample scratch; /* an in-use sample being built */
	struct heap_counters counters;
};

struct heap *heap_new(const struct heap_config *cfg)
{
	struct heap *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->allocs = cfg->allocs;
	h->max_live = cfg->max_live ? cfg->max_live : HEAP_MAX_LIVE;
	for (h->nbuckets = 64; h->nbuckets < h->max_live; h->nbuckets *= 2)
		;
	h->buckets = calloc(h->nbuckets, sizeof(*h->buckets));
	h->exited = calloc(MAX_EXITED, sizeof(*h->exited));
	if (!h->buckets || !h->exited) {
		heap_free(h);
		return NULL;
	}
	return h;
}

void heap_free(struct heap *h)
{
	if (!h)
		return;
	for (size_t i = 0; h->buckets && i < h->nbuckets; i++) {
		for (struct live *l = h->buckets[i], *next; l; l = next) {
			next = l->next;
			free(l);
		}
	}
	free(h->buckets);
	free(h->exited);
	free(h);
}

static size_t bucket_of(const struct heap *h, uint32_t pid, uint64_t ptr)
{
	uint64_t x = (ptr >> 4) ^ ((uint64_t)pid << 40);

	x *= 0x9e3779b97f4a7c15ULL;
	return (size_t)(x >> 32) & (h->nbuckets - 1);
}

/* The link pointing at (pid, start_ns, ptr)'s entry, or at the bucket's end. */
static struct live **find(struct heap *h, uint32_t pid, uint64_t start_ns, uint64_t ptr)
{
	struct live **at = &h->buckets[bucket_of(h, pid, ptr)];

	while (*at && !((*at)->ptr == ptr && (*at)->pid == pid && (*at)->start_ns == start_ns))
		at = &(*at)->next;
	return at;
}

static void unlink_live(struct heap *h, struct live **at)
{
	struct live *l = *at;

	*at = l->next;
	h->counters.live--;
	h->counters.live_bytes -= l->bytes;
	free(l);
}

void heap_alloc(struct heap *h, const struct otelprof_sample *s, uint64_t instance, const struct otelprof_alloc *a,
		uint64_t monotonic_to_unix_ns)
{
	uint64_t bytes = a->weight ? a->weight : 1, size = a->size ? a->size : 1;
	uint64_t objects = (bytes + size / 2) / size, time = s->time_ns + monotonic_to_unix_ns;
	unsigned depth = s->user_depth < OTELPROF_MAX_STACK_DEPTH ? s->user_depth : OTELPROF_MAX_STACK_DEPTH;
	struct live **at, *l;

	if (!objects)
		objects = 1;
	if (aggregate_add_heap(h->allocs, s, instance, time, bytes, objects)) {
		h->counters.aggregate_dropped++;
	} else {
		h->counters.allocs++;
		h->counters.alloc_bytes += bytes;
	}
	at = find(h, s->pid, s->process_start_ns, a->ptr);
	if (*at) { /* still live: its free was lost */
		h->counters.replaced++;
		unlink_live(h, at);
		at = find(h, s->pid, s->process_start_ns, a->ptr);
	}
	if (h->counters.live >= h->max_live) {
		h->counters.live_full++;
		return;
	}
	l = malloc(sizeof(*l) + depth * sizeof(l->ips[0]));
	if (!l) {
		h->counters.live_full++;
		return;
	}
	*l = (struct live){
		.start_ns = s->process_start_ns, .ptr = a->ptr, .instance = instance, .time_unix_ns = time,
		.bytes = bytes, .objects = objects, .pid = s->pid, .tid = s->tid, .cpu = s->cpu,
		.flags = s->flags & OTELPROF_SAMPLE_USER_TRUNCATED, .user_depth = (uint16_t)depth,
	};
	memcpy(l->comm, s->comm, sizeof(l->comm));
	memcpy(l->process_comm, s->process_comm, sizeof(l->process_comm));
	memcpy(l->ips, s->user_ips, depth * sizeof(l->ips[0]));
	*at = l;
	h->counters.live++;
	h->counters.live_bytes += bytes;
}

void heap_release(struct heap *h, const struct otelprof_free *f)
{
	struct live **at = find(h, f->pid, f->start_ns, f->ptr);

	if (!*at) {
		h->counters.unknown_frees++;
		return;
	}
	h->counters.frees++;
	unlink_live(h, at);
}

static int compare_proc(const void *a, const void *b)
{
	const struct proc_key *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* The live allocation's process (or program) is among the sorted exits. */
static bool exited(const struct heap *h, const struct live *l)
{
	struct proc_key key = { .pid = l->pid, .start_ns = l->start_ns };
	const struct proc_key *e = bsearch(&key, h->exited, h->nexited, sizeof(key), compare_proc);

	if (!e)
		return false;
	/* Entries of one process are adjacent: back to the first, then every one. */
	while (e > h->exited && !compare_proc(e - 1, &key))
		e--;
	for (; e < h->exited + h->nexited && !compare_proc(e, &key); e++)
		if (e->instance == ANY_INSTANCE || e->instance == l->instance)
			return true;
	return false;
}

/* Forget the live allocations of the processes that exited. */
static void sweep(struct heap *h)
{
	if (!h->nexited)
		return;
	qsort(h->exited, h->nexited, sizeof(*h->exited), compare_proc);
	for (size_t i = 0; h->counters.live && i < h->nbuckets; i++) {
		for (struct live **at = &h->buckets[i]; *at;) {
			if (exited(h, *at)) {
				h->counters.exited++;
				unlink_live(h, at);
			} else {
				at = &(*at)->next;
			}
		}
	}
	h->nexited = 0;
}

void heap_exit_instance(struct heap *h, uint32_t pid, uint64_t start_ns, uint64_t instance)
{
	if (!h->counters.live)
		return;
	if (h->nexited == MAX_EXITED)
		sweep(h);
	h->exited[h->nexited++] = (struct proc_key){ .pid = pid, .start_ns = start_ns, .instance = instance };
}

void heap_exit(struct heap *h, uint32_t pid, uint64_t start_ns)
{
	heap_exit_instance(h, pid, start_ns, ANY_INSTANCE);
}

int heap_add_inuse(struct heap *h, struct aggregate *inuse)
{
	struct otelprof_sample *s = &h->scratch;
	int r = 0;

	for (size_t i = 0; i < h->nbuckets; i++) {
		for (const struct live *l = h->buckets[i]; l; l = l->next) {
			s->hdr = (struct otelprof_record_header){ .kind = OTELPROF_RECORD_ALLOC, .size = sizeof(*s) };
			s->pid = l->pid;
			s->tid = l->tid;
			s->cpu = l->cpu;
			s->process_start_ns = l->start_ns;
			s->flags = l->flags;
			s->kernel_depth = 0;
			s->user_depth = l->user_depth;
			memcpy(s->comm, l->comm, sizeof(s->comm));
			memcpy(s->process_comm, l->process_comm, sizeof(s->process_comm));
			memcpy(s->user_ips, l->ips, l->user_depth * sizeof(l->ips[0]));
			if (aggregate_add_heap(inuse, s, l->instance, l->time_unix_ns, l->bytes, l->objects) == -ENOMEM)
				r = -ENOMEM;
		}
	}
	/* After: a process that exited in the interval shows what it held at its exit. */
	sweep(h);
	return r;
}

const struct heap_counters *heap_counters(const struct heap *h)
{
	return &h->counters;
}
