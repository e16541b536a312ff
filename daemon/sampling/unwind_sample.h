/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DWARF unwinding of a sample's copied user stack, between the ring buffer and the aggregation:
 * a sample that carries user registers and a stack window (OTELPROF_SAMPLE_STACK_WINDOW) gets its
 * user_ips from the symbolizer's CFI unwinder instead of the kernel's frame-pointer walk.
 *
 * Which stack is kept (never a mix of both): the unwound one when the walk reached the program's
 * entry, or ended at the window's end or the depth bound (then OTELPROF_SAMPLE_USER_TRUNCATED is
 * set and the profile shows a [truncated] frame) unless the frame-pointer walk begins with the same
 * frames and goes further (then that one, whole), or when it is at least as deep as the
 * frame-pointer walk; otherwise (the unwinder failed early: garbage, no CFI and no frame pointer,
 * a process gone) the kernel's frame-pointer stack.
 */
#ifndef OTELPROFD_UNWIND_SAMPLE_H
#define OTELPROFD_UNWIND_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"
#include "symbolizer.h"

#define UNWIND_SAMPLE_HISTOGRAM 256

/* One unwind in this many is timed, by the monotonic clock (the vDSO: no system call). The thread's
 * CPU clock is a system call, and reading it twice cost a third of the daemon's CPU at 300,000
 * off-CPU records a second in a virtual machine, more than the unwinds it timed. An unwind takes
 * microseconds: the thread is seldom preempted in one, so its wall time is its CPU time. */
#define UNWIND_SAMPLE_TIMED_EVERY 16

struct unwind_sample_counters {
	uint64_t windows;         /* samples that carried a stack window */
	uint64_t unwound;         /* samples whose user stack came from the unwinder */
	uint64_t truncated;       /* of those, marked truncated (window end or depth bound) */
	uint64_t kept_fp;         /* samples that kept the frame-pointer stack: the unwinder failed early */
	uint64_t fp_longer;       /* samples that kept the frame-pointer stack: the unwinder stopped at
				     the window's end and the frame-pointer chain began with the same
				     frames and went further (a deep program built with frame pointers) */
	uint64_t malformed;       /* windows whose sizes did not fit the record: frame-pointer stack kept */
	uint64_t window_bytes;    /* stack bytes received */
	uint64_t ns;              /* time spent unwinding (CLOCK_MONOTONIC), estimated from one unwind
				     in UNWIND_SAMPLE_TIMED_EVERY */
	uint64_t first_ns;        /* of which the first unwind's own (timed, counted once): it reads the
				     unwind tables of the program's files, milliseconds where the
				     others take microseconds */
	uint64_t us_histogram[UNWIND_SAMPLE_HISTOGRAM]; /* timed unwinds by whole microseconds spent; the
							   last bucket takes everything slower */
};

/*
 * How far a sample's window reached, and how far its walk needed (sampling/stack_need.h sizes the
 * next windows of the thread by it). All zero for a sample without a usable window.
 */
struct unwind_sample_extent {
	uint64_t sp;     /* the window's start */
	uint64_t end;    /* its end (sp + size) */
	uint64_t needed; /* the walk reached the entry: the last stack address it needed; else 0 */
	bool whole;      /* the copy ended before the size asked (the stack's top, or a cut by need) */
	bool failed;     /* the walk ended on a read past a window that was whole: garbage, or a cut
			    too short */
};

/* The median (or another quantile, 0-1) of the time per unwound sample in microseconds, from the
 * histogram: the upper edge of the bucket that holds it. */
unsigned unwind_sample_quantile_us(const struct unwind_sample_counters *c, double q);

/*
 * The sample to aggregate for the record (data, size) of (pid, instance) (see symbolizer.h): *out is a copy of the record's fixed part with
 * user_ips/user_depth unwound when it carries a usable window. Returns out, or the record itself
 * when it has no window (nothing to copy). *extent (NULL: not wanted) says how far the window and
 * the walk went.
 */
const struct otelprof_sample *unwind_sample(struct symbolizer *sym, pid_t pid, uint64_t instance, const void *data,
					    size_t size, struct otelprof_sample *out,
					    struct unwind_sample_counters *counters, struct unwind_sample_extent *extent);

/* Log the counters (a line at info level, the details at debug level); nothing without windows. */
void unwind_sample_log(const struct unwind_sample_counters *c, const struct symbolizer_stats *ss);

#endif
