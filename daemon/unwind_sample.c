#include "unwind_sample.h"

#include <string.h>
#include <time.h>

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

const struct otelprof_sample *unwind_sample(struct symbolizer *sym, const void *data, size_t size,
					    struct otelprof_sample *out, struct unwind_sample_counters *counters)
{
	const struct otelprof_sample *s = data;
	const struct otelprof_stack_window *w = (const void *)(s + 1);
	uint64_t ips[OTELPROF_MAX_STACK_DEPTH], start;
	struct unwind_result result;
	size_t n;

	if (!(s->flags & OTELPROF_SAMPLE_STACK_WINDOW))
		return s;
	counters->windows++;
	if (s->hdr.size < sizeof(*s) + sizeof(*w) || s->hdr.size > size ||
	    w->size > OTELPROF_MAX_STACK_COPY || w->size != s->hdr.size - sizeof(*s) - sizeof(*w)) {
		counters->malformed++;
		return s;
	}
	counters->window_bytes += w->size;
	start = thread_cpu_ns();
	n = symbolizer_unwind(sym, (pid_t)s->pid, &(struct sym_unwind_input){
		.ip = w->ip, .sp = w->sp, .bp = w->bp, .stack = w + 1, .stack_size = w->size,
		.stack_complete = w->size < w->requested,
	}, ips, OTELPROF_MAX_STACK_DEPTH, &result);
	start = thread_cpu_ns() - start;
	counters->ns += start;
	counters->us_histogram[start / 1000 < UNWIND_SAMPLE_HISTOGRAM ? start / 1000 : UNWIND_SAMPLE_HISTOGRAM - 1]++;

	memcpy(out, s, sizeof(*out));
	out->hdr.size = sizeof(*out);
	out->flags &= ~(uint32_t)OTELPROF_SAMPLE_STACK_WINDOW;
	switch (result.end) {
	case UNWIND_END_TRUNCATED:
	case UNWIND_END_DEPTH:
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
