// SPDX-License-Identifier: Apache-2.0
/* Off-CPU and allocation stacks put off, and their closing records held (stack_park.h). */
#include "sampling/stack_park.h"

#include <errno.h>
#include <string.h>

struct stack_park_key stack_park_key_of(const void *data)
{
	const struct otelprof_record_header *hdr = data;
	const struct otelprof_sample *s = data;
	const struct otelprof_off_cpu_end *e = data;
	const struct otelprof_free *f = data;
	struct otelprof_alloc a;

	switch (hdr->kind) {
	case OTELPROF_RECORD_OFF_CPU:
		return (struct stack_park_key){ OTELPROF_RECORD_OFF_CPU, s->tid, s->time_ns };
	case OTELPROF_RECORD_OFF_CPU_END:
		return (struct stack_park_key){ OTELPROF_RECORD_OFF_CPU, e->tid, e->start_ns };
	case OTELPROF_RECORD_ALLOC:
		memcpy(&a, (const uint8_t *)data + hdr->size - sizeof(a), sizeof(a));
		return (struct stack_park_key){ OTELPROF_RECORD_ALLOC, s->pid, a.ptr };
	default:
		return (struct stack_park_key){ OTELPROF_RECORD_ALLOC, f->pid, f->ptr };
	}
}

static bool same(const struct stack_park_key *a, const struct stack_park_key *b, bool any_at)
{
	return a->kind == b->kind && a->id == b->id && (any_at || a->at == b->at);
}

int stack_park_add(struct stack_park *p, const struct stack_park_key *key, const union stack_closing *closing)
{
	if (p->count == RECORD_REPLAY_MAX)
		return -ENOSPC;
	p->entries[p->count].key = *key;
	p->entries[p->count].closed = closing != NULL;
	if (closing)
		p->entries[p->count].closing = *closing;
	p->count++;
	return 0;
}

bool stack_park_has(const struct stack_park *p, const struct stack_park_key *key, bool any_at)
{
	for (size_t i = 0; i < p->count; i++)
		if (same(&p->entries[i].key, key, any_at))
			return true;
	return false;
}

bool stack_park_close(struct stack_park *p, const struct stack_park_key *key, const union stack_closing *closing)
{
	/* The oldest stack of key still open: an address freed, allocated again and freed pairs in order. */
	for (size_t i = 0; i < p->count; i++)
		if (same(&p->entries[i].key, key, false) && !p->entries[i].closed) {
			p->entries[i].closed = true;
			p->entries[i].closing = *closing;
			return true;
		}
	return false;
}

bool stack_park_take(struct stack_park *p, const struct stack_park_key *key, union stack_closing *closing)
{
	for (size_t i = 0; i < p->count; i++) {
		bool closed;

		if (!same(&p->entries[i].key, key, false))
			continue;
		closed = p->entries[i].closed;
		if (closed)
			*closing = p->entries[i].closing;
		memmove(&p->entries[i], &p->entries[i + 1], (p->count - i - 1) * sizeof(p->entries[0]));
		p->count--;
		return closed;
	}
	return false;
}
