// SPDX-License-Identifier: Apache-2.0
#include "sampling/off_cpu.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "profile/aggregate.h"

/* Buckets of the pending table (chained: threads come and go, deletion must be cheap). */
#define OFF_CPU_BUCKETS 4096

/* The fixed part of a sample, before its stacks: kept whole. */
#define SAMPLE_HEAD offsetof(struct otelprof_sample, kernel_ips)

/* A stack waiting for its end: the sample's head, then kernel_depth + user_depth addresses. */
struct pending {
	struct pending *next;
	uint64_t instance;
	uint8_t head[SAMPLE_HEAD];
	uint64_t ips[];
};

struct off_cpu {
	struct off_cpu_config cfg;
	struct off_cpu_counters counters;
	struct pending *buckets[OFF_CPU_BUCKETS];
	struct otelprof_sample sample; /* the sample rebuilt from a pending stack */
};

static const struct otelprof_sample *head_of(const struct pending *p)
{
	return (const struct otelprof_sample *)(const void *)p->head;
}

static struct pending **bucket_of(struct off_cpu *oc, uint32_t tid)
{
	return &oc->buckets[(tid * 2654435761u) % OFF_CPU_BUCKETS];
}

/* Unlink and return tid's pending stack, or NULL. */
static struct pending *take(struct off_cpu *oc, uint32_t tid)
{
	for (struct pending **pp = bucket_of(oc, tid); *pp; pp = &(*pp)->next) {
		struct pending *p = *pp;

		if (head_of(p)->tid == tid) {
			*pp = p->next;
			oc->counters.pending--;
			return p;
		}
	}
	return NULL;
}

/* Unlink and return any pending stack, searching from bucket *i on, or NULL when none is left. */
static struct pending *take_any(struct off_cpu *oc, size_t *i)
{
	for (; *i < OFF_CPU_BUCKETS; ++*i) {
		struct pending *p = oc->buckets[*i];

		if (p) {
			oc->buckets[*i] = p->next;
			oc->counters.pending--;
			return p;
		}
	}
	return NULL;
}

struct off_cpu *off_cpu_new(const struct off_cpu_config *cfg)
{
	struct off_cpu *oc = calloc(1, sizeof(*oc));

	if (!oc)
		return NULL;
	oc->cfg = *cfg;
	if (!(oc->cfg.probability > 0 && oc->cfg.probability <= 1))
		oc->cfg.probability = 1;
	return oc;
}

void off_cpu_free(struct off_cpu *oc)
{
	size_t i = 0;

	if (!oc)
		return;
	for (struct pending *p; (p = take_any(oc, &i));)
		free(p);
	free(oc);
}

void off_cpu_start(struct off_cpu *oc, const struct otelprof_sample *s, uint64_t instance)
{
	size_t kd = s->kernel_depth, ud = s->user_depth;
	struct pending *p, **bucket;

	if (kd > OTELPROF_MAX_STACK_DEPTH || ud > OTELPROF_MAX_STACK_DEPTH)
		return;
	/* An older stack of this thread lost its end (ring buffer full): this one replaces it. */
	free(take(oc, s->tid));
	if (oc->counters.pending >= oc->cfg.max_pending) {
		oc->counters.pending_full++;
		return;
	}
	p = malloc(sizeof(*p) + (kd + ud) * sizeof(uint64_t));
	if (!p) {
		oc->counters.pending_full++;
		return;
	}
	p->instance = instance;
	memcpy(p->head, s, SAMPLE_HEAD);
	memcpy(p->ips, s->kernel_ips, kd * sizeof(uint64_t));
	memcpy(p->ips + kd, s->user_ips, ud * sizeof(uint64_t));
	bucket = bucket_of(oc, s->tid);
	p->next = *bucket;
	*bucket = p;
	oc->counters.pending++;
}

/* The wait of p (taken out of the table), from its switch-out to end_ns: into the aggregate. Frees p. */
static void report_wait(struct off_cpu *oc, struct pending *p, uint64_t end_ns, uint64_t monotonic_to_unix_ns)
{
	struct otelprof_sample *s = &oc->sample;
	uint64_t start_ns = head_of(p)->time_ns, ns, scaled;

	ns = end_ns > start_ns ? end_ns - start_ns : 0;
	if (ns < oc->cfg.threshold_ns) {
		oc->counters.below_threshold++;
		free(p);
		return;
	}
	memcpy(s, p->head, SAMPLE_HEAD);
	memcpy(s->kernel_ips, p->ips, s->kernel_depth * sizeof(uint64_t));
	memcpy(s->user_ips, p->ips + s->kernel_depth, s->user_depth * sizeof(uint64_t));
	/* A wait the kernel kept 1 in weight over the CPU ceiling (bpf/cpu_shed.bpf.h) stands for weight. */
	scaled = (uint64_t)((double)ns * (s->weight > 1 ? s->weight : 1) / oc->cfg.probability + 0.5);
	if (aggregate_add_value(oc->cfg.agg, s, p->instance, end_ns + monotonic_to_unix_ns, scaled)) {
		oc->counters.aggregate_dropped++;
	} else {
		oc->counters.waits++;
		oc->counters.wait_ns += scaled;
	}
	free(p);
}

void off_cpu_end(struct off_cpu *oc, const struct otelprof_off_cpu_end *e, uint64_t monotonic_to_unix_ns)
{
	struct pending *p = take(oc, e->tid);

	if (!p || head_of(p)->time_ns != e->start_ns) {
		oc->counters.unmatched_ends++;
		free(p);
		return;
	}
	report_wait(oc, p, e->end_ns, monotonic_to_unix_ns);
}

void off_cpu_finish(struct off_cpu *oc, uint64_t now_ns, uint64_t monotonic_to_unix_ns,
		    bool (*waiting)(void *ctx, uint32_t tid, uint64_t start_ns), void *ctx)
{
	size_t i = 0;

	if (!oc)
		return;
	for (struct pending *p; (p = take_any(oc, &i));) {
		if (!waiting(ctx, head_of(p)->tid, head_of(p)->time_ns)) {
			oc->counters.lost_ends++;
			free(p);
			continue;
		}
		oc->counters.unfinished++;
		report_wait(oc, p, now_ns, monotonic_to_unix_ns);
	}
}

const struct off_cpu_counters *off_cpu_counters(const struct off_cpu *oc)
{
	return &oc->counters;
}

/* The BPF side's sampling threshold: probability * 2^32, UINT32_MAX for every switch-out. */
uint32_t off_cpu_sample_of(double probability)
{
	double v = probability * 4294967296.0;

	return v >= 4294967295.0 ? UINT32_MAX : v < 1 ? 1 : (uint32_t)v;
}
