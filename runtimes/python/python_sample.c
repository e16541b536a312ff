// SPDX-License-Identifier: Apache-2.0
#include "python_sample.h"

#include <string.h>

const struct otelprof_python_frame *python_sample_tail(const void *record, size_t size, unsigned *n,
						     struct python_sample_counters *counters)
{
	const struct otelprof_sample *s = record;
	size_t bytes, end;

	*n = 0;
	if (size < sizeof(*s) || !(s->flags & OTELPROF_SAMPLE_PYTHON))
		return NULL;
	bytes = (size_t)s->python_slots * sizeof(struct otelprof_python_frame);
	end = s->hdr.size - ((s->flags & OTELPROF_SAMPLE_TRACE_CTX) ? sizeof(struct otelprof_trace_ctx) : 0);
	if (!s->python_slots || s->python_slots > OTELPROF_PYTHON_MAX_SLOTS || s->hdr.size > size ||
	    end < sizeof(*s) + bytes || end > s->hdr.size) {
		counters->malformed++;
		return NULL;
	}
	*n = s->python_slots;
	return (const void *)((const uint8_t *)record + end - bytes);
}

/* Where the stack being built stands. */
struct splice {
	struct otelprof_sample *out;
	const struct otelprof_python_frame *slots;
	unsigned nslots, next; /* next slot to take */
	bool full;
};

static void push(struct splice *sp, uint64_t ip)
{
	if (sp->out->user_depth >= OTELPROF_MAX_STACK_DEPTH) {
		sp->full = true;
		return;
	}
	sp->out->user_ips[sp->out->user_depth++] = ip;
}

/* The Python frames of the next interpreter call (up to the next marker). */
static void push_call(struct splice *sp, struct symbolizer *sym, uint64_t instance,
		      struct python_sample_counters *counters)
{
	for (; sp->next < sp->nslots; sp->next++) {
		const struct otelprof_python_frame *f = &sp->slots[sp->next];
		uint64_t address;

		if (!f->code) {
			sp->next++;
			return;
		}
		if (symbolizer_python_frame(sym, (pid_t)sp->out->pid, instance, f->code, f->instr, &address)) {
			counters->frames_bad++;
			continue;
		}
		push(sp, address);
		counters->frames++;
	}
}

const struct otelprof_sample *python_sample(const struct python_table *t, struct symbolizer *sym, uint64_t instance,
					    const struct otelprof_sample *s, const void *record, size_t size,
					    struct otelprof_sample *out, struct python_sample_counters *counters)
{
	const struct python_entry *e;
	struct splice sp = { .out = out };
	unsigned depth = s->user_depth < OTELPROF_MAX_STACK_DEPTH ? s->user_depth : OTELPROF_MAX_STACK_DEPTH;
	bool matched = false;

	sp.slots = python_sample_tail(record, size, &sp.nslots, counters);
	if (!sp.slots)
		return s;
	e = python_table_find(t, s->pid, s->process_start_ns, instance);
	if (!e) {
		counters->no_process++;
		return s;
	}
	counters->samples++;
	memcpy(out, s, sizeof(*out));
	out->hdr.size = sizeof(*out);
	out->flags &= ~(uint32_t)(OTELPROF_SAMPLE_PYTHON | OTELPROF_SAMPLE_STACK_WINDOW);
	out->python_slots = 0;
	out->user_depth = 0;
	for (unsigned i = 0; i < depth; i++) {
		/* Return addresses point after the call: the call itself is the byte before. */
		uint64_t ip = s->user_ips[i], pc = ip - (i == 0 && !(s->flags & OTELPROF_SAMPLE_KERNEL_MODE) ? 0 : 1);

		if (pc >= e->proc.eval_start && pc < e->proc.eval_end && sp.next < sp.nslots) {
			push_call(&sp, sym, instance, counters);
			matched = true;
		} else {
			push(&sp, ip);
		}
	}
	if (!matched)
		counters->unmatched++;
	/* The rest (a cut native stack): outer Python frames at the root end. */
	while (sp.next < sp.nslots)
		push_call(&sp, sym, instance, counters);
	if (sp.full) {
		out->flags |= OTELPROF_SAMPLE_USER_TRUNCATED;
		counters->truncated++;
	}
	return out;
}
