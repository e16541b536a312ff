// SPDX-License-Identifier: Apache-2.0
/*
 * The record path (daemon/sampling/record_path.c) without BPF: records built by hand for this very
 * process reach the process table and the aggregate; malformed ones are counted and dropped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "process/process_table.h"
#include "profile/aggregate.h"
#include "records.h"
#include "sampling/record_path.h"
#include "sample-record.h"
#include "symbolizer.h"

struct fixture {
	struct symbolizer *sym;
	struct process_table *processes;
	struct aggregate *agg;
	struct record_path *rp;
	uint64_t start_ns; /* this process's start (tick precision, as /proc says) */
};

static int setup(void **state)
{
	static struct fixture f;
	struct agg_limits limits = { 100, 1 << 20, 1000 };

	memset(&f, 0, sizeof(f));
	f.sym = symbolizer_new(&(struct symbolizer_config){ .no_debuginfod = true });
	f.processes = process_table_new(&(struct process_table_config){ 0 });
	f.agg = aggregate_new(&limits);
	f.rp = record_path_new(&(struct record_path_config){ .sym = f.sym, .processes = f.processes, .agg = f.agg });
	if (!f.sym || !f.processes || !f.agg || !f.rp || process_start_ns("/proc", (uint32_t)getpid(), &f.start_ns))
		return -1;
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	record_path_free(f->rp);
	aggregate_free(f->agg);
	process_table_free(f->processes);
	symbolizer_free(f->sym);
	return 0;
}

static struct otelprof_sample own_sample(const struct fixture *f)
{
	struct otelprof_sample s = sample_record((uint32_t)getpid(), (uint32_t)getpid(), 0, "test", "test");

	s.time_ns = 1000;
	s.process_start_ns = f->start_ns;
	s.user_depth = 1;
	s.user_ips[0] = (uint64_t)(uintptr_t)own_sample;
	return s;
}

static void test_malformed(void **state)
{
	struct fixture *f = *state;
	struct otelprof_sample s = own_sample(f);
	struct otelprof_record_header unknown = { .kind = 99, .size = sizeof(unknown) };
	uint64_t before = record_path_counters(f->rp)->malformed_records;

	record_path_handle(f->rp, &s, 4);                       /* shorter than a header */
	s.hdr.size = sizeof(s) + 8;
	record_path_handle(f->rp, &s, sizeof(s));               /* claims more than it holds */
	s.hdr.size = sizeof(s.hdr);
	record_path_handle(f->rp, &s, sizeof(s.hdr));           /* a sample without its fields */
	record_path_handle(f->rp, &unknown, sizeof(unknown));   /* a kind nobody sends */
	assert_int_equal(record_path_counters(f->rp)->malformed_records - before, 4);
	assert_int_equal(aggregate_counters(f->agg)->samples, 0);
}

static void test_sample_reaches_aggregate(void **state)
{
	struct fixture *f = *state;
	struct otelprof_sample s = own_sample(f);
	const struct agg_entry *e;

	record_path_set_time_offset(f->rp, 5000);
	record_path_handle(f->rp, &s, sizeof(s));
	assert_int_equal(aggregate_entry_count(f->agg), 1);
	e = aggregate_entry(f->agg, 0);
	assert_int_equal(e->pid, (uint32_t)getpid());
	assert_int_not_equal(e->process_instance, PROCESS_INSTANCE_UNKNOWN);
	assert_int_equal(e->ntimestamps, 1);
	assert_int_equal(e->timestamps[0], 6000);
	assert_non_null(process_table_find(f->processes, s.pid, s.process_start_ns));
}

static void test_exec_settles(void **state)
{
	struct fixture *f = *state;
	struct otelprof_proc_event e;

	memset(&e, 0, sizeof(e));
	e.hdr.kind = OTELPROF_RECORD_EXEC;
	e.hdr.size = sizeof(e);
	e.pid = (uint32_t)getpid();
	e.start_ns = f->start_ns;
	strcpy(e.comm, "test");
	strcpy(e.filename, "/proc/self/exe");
	record_path_handle(f->rp, &e, sizeof(e));
	assert_int_equal(process_table_counters(f->processes)->execs, 1);
	assert_true(record_path_settling(f->rp));
	record_path_settle(f->rp, clock_ns(CLOCK_MONOTONIC)); /* too soon: still waits */
	assert_true(record_path_settling(f->rp));
	record_path_settle(f->rp, clock_ns(CLOCK_MONOTONIC) + EXEC_SETTLE_MS * 1000000ULL); /* read again, done */
	assert_false(record_path_settling(f->rp));

	e.hdr.kind = OTELPROF_RECORD_EXIT;
	record_path_handle(f->rp, &e, sizeof(e));
	assert_int_equal(process_table_counters(f->processes)->exits, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_sample_reaches_aggregate),
		cmocka_unit_test(test_exec_settles),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
