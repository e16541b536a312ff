/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stack windows sized by need. A thread's stack copy used to run up to the top of its stack mapping:
 * above the outermost frame sit the environment and auxiliary vector (a main thread) or the thread
 * descriptor and TLS (a pthread), about 8 KiB of the 9 KiB copied per sample of a busy C thread,
 * never read by the unwinder. Once a walk of a whole window reached the entry, the thread's top in
 * the BPF map stack_tops is lowered to the last address that walk needed (plus STACK_NEED_SLACK):
 * its next windows stop there. The outermost frame of a thread does not move, so the windows still
 * hold every frame; a walk that fails on such a window withdraws the thread's top (the next copy
 * goes to the mapping's end again). The map's entries hold one second (STACK_TOP_TTL_NS in
 * bpf/profile.bpf.c): a thread still sampled has its top set again after half of that, so its
 * windows never grow back for a second (at 10,000 Hz that filled the ring buffer).
 *
 * A thread's top is set at its second such window within a second: one sampled more seldom would
 * have it lapse unused, and pay the two system calls for nothing.
 *
 * A need is never a page boundary, and a top the program learned always is: a window's end tells
 * which cut it (a copy whose first read failed is empty, and cut by neither). At most STACK_NEED_PER_SECOND changes a second (two system calls each), the rest
 * counted.
 */
#ifndef OTELPROFD_STACK_NEED_H
#define OTELPROFD_STACK_NEED_H

#include <stdbool.h>
#include <stdint.h>

#include "sampling/unwind_sample.h"

#define STACK_NEED_SLACK 64
#define STACK_NEED_PER_SECOND 1024
#define STACK_NEED_PAGE 4096
/* Threads whose top was set lately, direct-mapped by tid: the samples of a thread taken before its
 * top was set (still in the ring buffer) do not set it again. */
#define STACK_NEED_RECENT 1024
/* A thread whose top was withdrawn is not given one again for this long. */
#define STACK_NEED_BACKOFF_NS 10000000000ULL
/* How long a top holds in the BPF map (STACK_TOP_TTL_NS in bpf/profile.bpf.c). */
#define STACK_NEED_TTL_NS 1000000000ULL

/* Set thread tid's top to top (0: forget it), when the top the map holds is window_end; now_ns:
 * CLOCK_MONOTONIC. 0 or -errno (sampler_set_stack_need()). */
typedef int (*stack_need_set_fn)(void *ctx, uint32_t tid, uint64_t window_end, uint64_t top, uint64_t now_ns);

struct stack_need_counters {
	uint64_t set;        /* thread tops lowered to their need */
	uint64_t refreshed;  /* tops set again before they lapsed (a thread still sampled) */
	uint64_t withdrawn;  /* tops withdrawn: a walk failed on a window cut by need */
	uint64_t refused;    /* changes the map refused (its learned top was another, or an error) */
	uint64_t over_budget; /* changes not made: STACK_NEED_PER_SECOND reached */
	uint64_t backed_off; /* tops not set: the thread's was withdrawn within STACK_NEED_BACKOFF_NS */
};

/* A thread lately seen, by tid modulo STACK_NEED_RECENT. */
struct stack_need_recent {
	uint32_t tid;
	uint64_t set_ns;       /* CLOCK_MONOTONIC when its top was set */
	uint64_t withdrawn_ns; /* ... or withdrawn (0: never) */
	uint64_t seen_ns;      /* its last whole window that could have set it */
};

struct stack_need {
	stack_need_set_fn set; /* NULL: off */
	void *ctx;
	uint64_t second;       /* the budget's second (CLOCK_MONOTONIC / 1e9) */
	unsigned spent;        /* changes made in it */
	struct stack_need_counters *counters; /* borrowed */
	struct stack_need_recent recent[STACK_NEED_RECENT];
};

/* The window of a record was cut by a need, not by the end of the stack's mapping. */
bool stack_need_cut(const struct unwind_sample_extent *e);

/* After thread tid's sample taken at time_ns (CLOCK_MONOTONIC, as the BPF program reads it) was
 * unwound (e: its extent): lower the thread's top, keep it set, or withdraw it. */
void stack_need_update(struct stack_need *n, uint32_t tid, uint64_t time_ns, const struct unwind_sample_extent *e);

#endif
