// SPDX-License-Identifier: Apache-2.0
#include "sampling/unwind_sample.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"

/*
 * The frame-pointer chain goes further than the unwound frames and begins with exactly them: the
 * same stack, longer. Frames are never mixed: the chain is kept whole or not at all.
 */
static bool fp_extends(const struct otelprof_sample *s, const uint64_t *ips, size_t n)
{
	return n && s->user_depth > n && s->user_depth <= OTELPROF_MAX_STACK_DEPTH &&
	       !memcmp(s->user_ips, ips, n * sizeof(ips[0]));
}

/*
 * The record's fixed part into out, only as far as it is used: the head and the valid addresses.
 * The whole struct is 2 KiB of mostly unused address slots, and copying it was a third of the
 * daemon's CPU at 300,000 off-CPU records a second.
 */
static void copy_used(struct otelprof_sample *out, const struct otelprof_sample *s)
{
	size_t kd = s->kernel_depth < OTELPROF_MAX_STACK_DEPTH ? s->kernel_depth : OTELPROF_MAX_STACK_DEPTH;
	size_t ud = s->user_depth < OTELPROF_MAX_STACK_DEPTH ? s->user_depth : OTELPROF_MAX_STACK_DEPTH;

	memcpy(out, s, offsetof(struct otelprof_sample, kernel_ips));
	memcpy(out->kernel_ips, s->kernel_ips, kd * sizeof(s->kernel_ips[0]));
	memcpy(out->user_ips, s->user_ips, ud * sizeof(s->user_ips[0]));
}

const struct otelprof_sample *unwind_sample(struct symbolizer *sym, pid_t pid, uint64_t instance, const void *data,
					    size_t size, struct otelprof_sample *out,
					    struct unwind_sample_counters *counters, struct unwind_sample_extent *extent)
{
	const struct otelprof_sample *s = data;
	const struct otelprof_stack_window *w = (const void *)(s + 1);
	uint64_t ips[OTELPROF_MAX_STACK_DEPTH], start;
	struct unwind_result result;
	size_t n, end;
	bool timed;

	if (extent)
		*extent = (struct unwind_sample_extent){ 0 };
	if (!(s->flags & OTELPROF_SAMPLE_STACK_WINDOW))
		return s;
	counters->windows++;
	/* The Python frames or the goroutine labels, and a thread context, when there are some, follow
	 * the window (a wrapped end fails the check below); an allocation's fields end an allocation
	 * record. */
	end = s->hdr.size - ((s->flags & OTELPROF_SAMPLE_TRACE_CTX) ? sizeof(struct otelprof_trace_ctx) : 0);
	if (s->hdr.kind == OTELPROF_RECORD_ALLOC)
		end -= sizeof(struct otelprof_alloc);
	if (s->flags & OTELPROF_SAMPLE_PYTHON)
		end -= (size_t)s->python_slots * sizeof(struct otelprof_python_frame);
	if (s->flags & OTELPROF_SAMPLE_GO_LABELS)
		end -= sizeof(struct otelprof_go_labels);

	if (end < sizeof(*s) + sizeof(*w) || end > size || s->hdr.size > size ||
	    w->size > OTELPROF_MAX_STACK_COPY || w->size != end - sizeof(*s) - sizeof(*w)) {
		counters->malformed++;
		return s;
	}
	counters->window_bytes += w->size;
	timed = counters->windows % UNWIND_SAMPLE_TIMED_EVERY == 1;
	start = timed ? clock_ns(CLOCK_MONOTONIC) : 0;
	n = symbolizer_unwind_instance(sym, pid, instance, &(struct sym_unwind_input){
		.ip = w->ip, .sp = w->sp, .bp = w->bp, .stack = w + 1, .stack_size = w->size,
		.stack_complete = w->size < w->requested,
	}, ips, OTELPROF_MAX_STACK_DEPTH, &result);
	if (timed) {
		start = clock_ns(CLOCK_MONOTONIC) - start;
		/* The first unwind counts once: weighted as one of 16 alike, its reading of the files'
		 * tables made the estimate of a short run's mean a hundred times too high. */
		counters->ns += counters->windows == 1 ? start : start * UNWIND_SAMPLE_TIMED_EVERY;
		if (counters->windows == 1)
			counters->first_ns = start;
		counters->us_histogram[start / 1000 < UNWIND_SAMPLE_HISTOGRAM ? start / 1000
									       : UNWIND_SAMPLE_HISTOGRAM - 1]++;
	}

	if (extent)
		*extent = (struct unwind_sample_extent){
			.sp = w->sp, .end = w->sp + w->size, .whole = w->size < w->requested,
			.needed = result.end == UNWIND_END_ENTRY ? result.top : 0,
			.failed = w->size < w->requested && result.end == UNWIND_END_BAD_READ,
		};
	copy_used(out, s);
	out->hdr.size = sizeof(*out);
	out->flags &= ~(uint32_t)OTELPROF_SAMPLE_STACK_WINDOW;
	switch (result.end) {
	case UNWIND_END_TRUNCATED:
	case UNWIND_END_DEPTH:
		if (fp_extends(s, ips, n)) {
			/* A program with frame pointers deeper than the window: the kernel's walk is the
			 * same stack, whole (or as deep as it goes). */
			counters->fp_longer++;
			if (s->user_depth >= OTELPROF_MAX_STACK_DEPTH)
				out->flags |= OTELPROF_SAMPLE_USER_TRUNCATED;
			return out;
		}
		out->flags |= OTELPROF_SAMPLE_USER_TRUNCATED;
		counters->truncated++;
		break;
	case UNWIND_END_ENTRY:
		break;
	default:
		if (n < s->user_depth) {
			counters->kept_fp++;
			return out;
		}
		break;
	}
	counters->unwound++;
	if (!n && w->ip) {
		/* Nothing unwound (the process's mappings are gone, say), and no frame-pointer walk ran
		 * (the window held the whole stack): the leaf is still known exactly. */
		ips[0] = w->ip;
		n = 1;
	}
	memcpy(out->user_ips, ips, n * sizeof(ips[0]));
	out->user_depth = (uint16_t)n;
	return out;
}

unsigned unwind_sample_quantile_us(const struct unwind_sample_counters *c, double q)
{
	uint64_t total = 0, seen = 0;

	for (unsigned i = 0; i < UNWIND_SAMPLE_HISTOGRAM; i++)
		total += c->us_histogram[i];
	for (unsigned i = 0; i < UNWIND_SAMPLE_HISTOGRAM; i++) {
		seen += c->us_histogram[i];
		if (total && (double)seen >= q * (double)total)
			return i + 1;
	}
	return 0;
}

void unwind_sample_log(const struct unwind_sample_counters *u, const struct symbolizer_stats *ss)
{
	if (!u->windows)
		return;
	/* Statistics for whoever tunes the unwinder, not for every run (-v). */
	log_debug("Unwound %" PRIu64 " of %" PRIu64 " user stacks with DWARF CFI (%" PRIu64 " truncated by the stack "
		 "window, %" PRIu64 " kept frame pointers, %" PRIu64 " whose frame pointers went further), time per "
		 "sample: median under %u us, 90%% under %u us, mean %.1f us (the first unwind %.1f ms of it; one in 16 "
		 "timed, so a file's first unwind, which opens it, weighs 16)", u->unwound,
		 u->windows, u->truncated, u->kept_fp, u->fp_longer, unwind_sample_quantile_us(u, 0.5),
		 unwind_sample_quantile_us(u, 0.9), u->ns / 1e3 / u->windows, u->first_ns / 1e6);
	log_debug("unwind: %" PRIu64 " stack bytes received (%" PRIu64 " per sample), %" PRIu64 " malformed windows; "
		  "frames: %" PRIu64 " CFI, %" PRIu64 " frame pointer, %" PRIu64 " of Go text by its SP delta; Go ends: %" PRIu64
		  " top frames, %" PRIu64 " stack switches; rules: %" PRIu64 " cached, %" PRIu64
		  " compiled, %" PRIu64 " refused; ends: entry %" PRIu64 ", truncated %" PRIu64 ", depth %" PRIu64
		  ", no rule %" PRIu64 ", bad read %" PRIu64 ", not growing %" PRIu64 ", bad expression %" PRIu64
		  ", bad ip %" PRIu64, u->window_bytes, u->window_bytes / u->windows, u->malformed,
		  ss->unwind_frames_cfi, ss->unwind_frames_fp, ss->go_sp_frames, ss->go_top_frames,
		  ss->go_stack_switches, ss->cfi_rule_cache_hits, ss->cfi_rule_cache_misses,
		  ss->cfi_rule_errors, ss->unwind_ends[UNWIND_END_ENTRY], ss->unwind_ends[UNWIND_END_TRUNCATED],
		  ss->unwind_ends[UNWIND_END_DEPTH], ss->unwind_ends[UNWIND_END_NO_RULE],
		  ss->unwind_ends[UNWIND_END_BAD_READ], ss->unwind_ends[UNWIND_END_NOT_GROWING],
		  ss->unwind_ends[UNWIND_END_BAD_EXPR], ss->unwind_ends[UNWIND_END_BAD_IP]);
}
