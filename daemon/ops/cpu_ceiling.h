/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --max-cpu: the daemon's own CPU (every thread: CLOCK_PROCESS_CPUTIME_ID) held under a ceiling by
 * shedding work in a fixed order, never by stalling the loop:
 *   1. CPU_SHED_DEFER_OPENS: the sample path opens no module (no debug info inflated, new binaries
 *      unwound by frame pointers); the files are opened when the profile is built for export.
 *   2. CPU_SHED_DROP_SAMPLES: the kernel keeps 1 on-CPU sample and 1 off-CPU wait (--off-cpu) in
 *      keep_every (bpf/cpu_shed.bpf.h), each kept one weighing keep_every, so the profile's totals
 *      stay unbiased; process records are still followed so that later samples are named right. keep_every starts at CPU_SHED_KEEP_FIRST, is multiplied by 4 after each
 *      window over the ceiling (up to CPU_SHED_KEEP_MAX) and halved after each under
 *      CPU_CEILING_RELAX_PERCENT of it; back at 1, the level steps down.
 * The level moves one step a window (CPU_CEILING_WINDOW_NS): up after a window over the ceiling,
 * down after one under CPU_CEILING_RELAX_PERCENT of it. Within a window, once the window's share
 * is spent, samples are dropped until it ends, whatever the level (the kernel keeps none, counted
 * as lost): the ceiling holds each window.
 * Pure arithmetic on times the caller reads (testable): no clock, no I/O.
 */
#ifndef OTELPROFD_CPU_CEILING_H
#define OTELPROFD_CPU_CEILING_H

#include <stdbool.h>
#include <stdint.h>

#define CPU_CEILING_WINDOW_NS 1000000000ULL
/* The level steps down after a window under this share of the ceiling (in percent of it). */
#define CPU_CEILING_RELAX_PERCENT 70
/* The kernel's keep rate on entering CPU_SHED_DROP_SAMPLES, and its largest (1 sample in 256: at
 * 999 Hz on 64 CPUs, 250 samples a second are still read). */
#define CPU_SHED_KEEP_FIRST 4
#define CPU_SHED_KEEP_MAX 256

enum cpu_shed_level {
	CPU_SHED_NONE,
	CPU_SHED_DEFER_OPENS,
	CPU_SHED_DROP_SAMPLES,
};

struct cpu_ceiling {
	double max_percent;          /* of one CPU; 0: off (never sheds) */
	uint64_t window_start_ns;    /* CLOCK_MONOTONIC start of the current window */
	uint64_t window_start_cpu_ns; /* the process's CPU time then */
	enum cpu_shed_level level;   /* the level set at the last window's end */
	bool window_spent;           /* the current window's share is used up: samples are dropped */
	uint32_t keep_every;         /* at CPU_SHED_DROP_SAMPLES: the kernel keeps 1 sample in this many */
	double last_percent;         /* CPU of the last whole window, in percent of one CPU */
	uint64_t windows_over;       /* windows that ended over the ceiling */
	uint64_t windows_spent;      /* windows whose share was used up before they ended */
};

/* Start measuring at now with the process's CPU time cpu_ns; max_percent 0 turns it off. */
void cpu_ceiling_init(struct cpu_ceiling *c, double max_percent, uint64_t now, uint64_t cpu_ns);
/* Call at every turn of the loop (at least every SAMPLER_CONSUME_BUDGET_MS or so): the level to
 * shed at now. */
enum cpu_shed_level cpu_ceiling_update(struct cpu_ceiling *c, uint64_t now, uint64_t cpu_ns);
/* What the kernel keeps now (sampler_set_keep_every()): 1 sample in this many; 1 below
 * CPU_SHED_DROP_SAMPLES, OTELPROF_SHED_KEEP_NONE while the window's share is spent. */
uint32_t cpu_ceiling_keep_every(const struct cpu_ceiling *c);
/* Words for a level ("none", "defer_opens", "drop_samples"): its metric label and log name. */
const char *cpu_shed_level_name(enum cpu_shed_level level);

#endif
