// SPDX-License-Identifier: Apache-2.0
/*
 * The off-CPU join (daemon/sampling/off_cpu.c) without BPF: a switch-out's stack and its end make one
 * valued sample scaled by the probability; an end without its stack, a wait under the threshold and
 * a full pending table are counted and dropped; the values reach the profile and the writers.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/writers.h"
#include "profile/aggregate.h"
#include "profile/profile.h"
#include "records.h"
#include "sampling/off_cpu.h"
#include "symbolizer.h"

static struct otelprof_sample stack_of(uint32_t tid, uint64_t start_ns)
{
	struct otelprof_sample s = {
		.hdr = { OTELPROF_RECORD_OFF_CPU, sizeof(s) }, .time_ns = start_ns, .pid = 100, .tid = tid,
		.kernel_depth = 2, .user_depth = 1, .comm = "t", .process_comm = "p",
	};

	s.kernel_ips[0] = 0xffffffff81000010;
	s.kernel_ips[1] = 0xffffffff81000020;
	s.user_ips[0] = 0x401000 + tid;
	return s;
}

static struct otelprof_off_cpu_end end_of(uint32_t tid, uint64_t start_ns, uint64_t end_ns)
{
	return (struct otelprof_off_cpu_end){
		.hdr = { OTELPROF_RECORD_OFF_CPU_END, sizeof(struct otelprof_off_cpu_end) }, .start_ns = start_ns,
		.end_ns = end_ns, .pid = 100, .tid = tid,
	};
}

static void test_join_scale_and_drops(void **state)
{
	struct agg_limits limits = { 100, 1 << 20, 1000 };
	struct aggregate *agg = aggregate_new(&limits);
	struct off_cpu *oc = off_cpu_new(&(struct off_cpu_config){
		.agg = agg, .threshold_ns = 1000, .probability = 0.25, .max_pending = 2,
	});
	const struct off_cpu_counters *c = off_cpu_counters(oc);
	struct otelprof_sample s;
	struct otelprof_off_cpu_end e;

	(void)state;
	s = stack_of(1, 5000);
	off_cpu_start(oc, &s, 0);
	e = end_of(1, 5000, 8000); /* 3 us away at probability 0.25: 12 us */
	off_cpu_end(oc, &e, 1000000);
	assert_int_equal(c->waits, 1);
	assert_int_equal(c->wait_ns, 12000);
	assert_int_equal(aggregate_entry_count(agg), 1);
	assert_int_equal(aggregate_entry(agg, 0)->value_sum, 12000);
	assert_int_equal(aggregate_entry(agg, 0)->timestamps[0], 1008000);

	e = end_of(2, 1, 9000); /* no stack */
	off_cpu_end(oc, &e, 0);
	assert_int_equal(c->unmatched_ends, 1);

	s = stack_of(3, 100);
	off_cpu_start(oc, &s, 0);
	e = end_of(3, 100, 600); /* under the 1 us threshold */
	off_cpu_end(oc, &e, 0);
	assert_int_equal(c->below_threshold, 1);

	for (uint32_t tid = 10; tid < 13; tid++) {
		s = stack_of(tid, 1);
		off_cpu_start(oc, &s, 0);
	}
	assert_int_equal(c->pending, 2);
	assert_int_equal(c->pending_full, 1);
	e = end_of(10, 2, 9000); /* the stack of another wait of this thread */
	off_cpu_end(oc, &e, 0);
	assert_int_equal(c->unmatched_ends, 2);
	assert_int_equal(c->pending, 1);
	off_cpu_free(oc); /* frees the one still pending */
	aggregate_free(agg);
}

/* The in-flight map of the test: thread 21 still waits since 1000; the others' ends were lost. */
static bool still_waiting(void *ctx, uint32_t tid, uint64_t start_ns)
{
	(void)ctx;
	return tid == 21 && start_ns == 1000;
}

/* The end of the run: a wait still going counts up to it; a stack whose end was lost is counted. */
static void test_finish(void **state)
{
	struct agg_limits limits = { 100, 1 << 20, 1000 };
	struct aggregate *agg = aggregate_new(&limits);
	struct off_cpu *oc = off_cpu_new(&(struct off_cpu_config){
		.agg = agg, .threshold_ns = 1000, .probability = 0.5, .max_pending = 8,
	});
	const struct off_cpu_counters *c = off_cpu_counters(oc);
	struct otelprof_sample s;

	(void)state;
	s = stack_of(21, 1000);
	off_cpu_start(oc, &s, 0);
	s = stack_of(22, 1000);
	off_cpu_start(oc, &s, 0);
	off_cpu_finish(oc, 6000, 1000000, still_waiting, NULL); /* 5 us so far at probability 0.5 */
	assert_int_equal(c->unfinished, 1);
	assert_int_equal(c->lost_ends, 1);
	assert_int_equal(c->pending, 0);
	assert_int_equal(c->waits, 1);
	assert_int_equal(aggregate_entry_count(agg), 1);
	assert_int_equal(aggregate_entry(agg, 0)->value_sum, 10000);
	assert_int_equal(aggregate_entry(agg, 0)->timestamps[0], 1006000);
	off_cpu_finish(NULL, 0, 0, still_waiting, NULL); /* no --off-cpu: nothing to do */
	off_cpu_free(oc);
	aggregate_free(agg);
}

static void test_profile_and_writers(void **state)
{
	struct agg_limits limits = { 100, 1 << 20, 1000 };
	struct aggregate *on = aggregate_new(&limits), *off = aggregate_new(&limits);
	struct otelprof_sample s = stack_of(7, 10);
	struct symbolizer *sym = symbolizer_new(&(struct symbolizer_config){ .no_debuginfod = true });
	struct profile *p;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	uint8_t *buf;
	size_t n;

	(void)state;
	assert_non_null(sym);
	s.hdr.kind = OTELPROF_RECORD_SAMPLE;
	assert_int_equal(aggregate_add(on, &s, 50), 0);
	assert_int_equal(aggregate_add_value(off, &s, 0, 300, 2000000), 0);
	assert_int_equal(aggregate_add_value(off, &s, 0, 200, 1000000), 0);
	p = profile_build(on, sym, &(struct profile_build_options){ .frequency = 19, .off_cpu = off });
	assert_non_null(p);
	assert_true(p->off_cpu_enabled);
	assert_int_equal(p->total_count, 1);
	assert_int_equal(p->off_cpu_count, 2);
	assert_int_equal(p->off_cpu_ns, 3000000);
	for (size_t i = 0; i < p->nsamples; i++) {
		if (!p->samples[i].off_cpu)
			continue;
		/* Values follow their timestamps' order. */
		assert_int_equal(p->samples[i].timestamps[0], 200);
		assert_int_equal(p->samples[i].values[0], 1000000);
		assert_int_equal(p->samples[i].values[1], 2000000);
	}
	f = open_memstream(&text, &len);
	assert_int_equal(write_folded_off_cpu(p, f), 0);
	fclose(f);
	assert_non_null(strstr(text, " 3000\n")); /* microseconds */
	free(text);
	f = open_memstream(&text, &len);
	assert_int_equal(write_folded(p, f), 0);
	fclose(f);
	assert_non_null(strstr(text, " 1\n")); /* the on-CPU sample alone */
	free(text);
	f = open_memstream(&text, &len);
	assert_int_equal(write_top(p, 5, f), 0);
	fclose(f);
	assert_non_null(strstr(text, "Off-CPU: 0.003 s over 2 waits"));
	free(text);
	assert_int_equal(encode_pprof(p, &buf, &n), 0);
	free(buf);
	profile_free(p);
	symbolizer_free(sym);
	aggregate_free(on);
	aggregate_free(off);
}

static void test_off_cpu_path(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(folded_off_cpu_path("/tmp/x.folded", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/tmp/x.off-cpu.folded");
	assert_int_equal(folded_off_cpu_path("y", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "y.off-cpu.folded");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join_scale_and_drops),
		cmocka_unit_test(test_finish),
		cmocka_unit_test(test_profile_and_writers),
		cmocka_unit_test(test_off_cpu_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
