// SPDX-License-Identifier: Apache-2.0
/*
 * The record path (daemon/sampling/record_path.c) without BPF: records built by hand for this very
 * process reach the process table and the aggregate; malformed ones are counted and dropped; a lost
 * exec record never leaves a child described with its parent's environment; a Python process whose
 * first records are switch-outs (--off-cpu) has its interpreter found all the same.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "process/metadata.h"
#include "process/process_table.h"
#include "profile/aggregate.h"
#include "records.h"
#include "sampling/off_cpu.h"
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

/* A fake proc_root/PID: started at start_ticks clock ticks after boot, with service in its environment. */
static void fake_process(const char *root, uint32_t pid, uint64_t start_ticks, const char *service)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/stat", root, pid);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "%u (storm) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n", pid,
		(unsigned long long)start_ticks);
	fclose(f);
	snprintf(path, sizeof(path), "%s/%u/environ", root, pid);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "PATH=/bin%cOTEL_SERVICE_NAME=%s%c", 0, service, 0);
	fclose(f);
}

static void gone(const char *root, uint32_t pid)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%u/stat", root, pid);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%u/environ", root, pid);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%u", root, pid);
	rmdir(path);
}

static void handle_proc_event(struct record_path *rp, uint32_t kind, uint32_t pid, uint64_t start_ns,
			      uint32_t parent_pid, uint64_t parent_start_ns, uint32_t exec_id)
{
	struct otelprof_proc_event e;

	memset(&e, 0, sizeof(e));
	e.hdr.kind = kind;
	e.hdr.size = sizeof(e);
	e.pid = pid;
	e.start_ns = start_ns;
	e.parent_pid = parent_pid;
	e.parent_start_ns = parent_start_ns;
	e.exec_id = exec_id;
	strcpy(e.comm, "storm");
	if (kind == OTELPROF_RECORD_EXEC)
		strcpy(e.filename, "/usr/bin/storm");
	record_path_handle(rp, &e, sizeof(e));
}

/* The service.name a sample of pid would be described with (its instance's entry). */
static const char *sample_service(struct fixture *f, struct process_table *t, uint32_t pid, uint64_t start_ns,
				  uint32_t exec_id, uint32_t flags, char *buf, size_t size)
{
	struct otelprof_sample s = own_sample(f);
	const struct process_info *pi;
	bool aggregated = false;

	s.pid = s.tid = pid;
	s.process_start_ns = start_ns;
	s.exec_id = exec_id;
	s.flags = flags;
	s.user_depth = 0;
	strcpy(s.process_comm, "st7");
	record_path_handle(f->rp, &s, sizeof(s));
	/* The sample took the current instance: the one the profile describes it with. */
	pi = process_table_find(t, pid, start_ns);
	assert_non_null(pi);
	for (size_t i = 0; i < aggregate_entry_count(f->agg); i++)
		aggregated |= aggregate_entry(f->agg, i)->pid == pid &&
			      aggregate_entry(f->agg, i)->process_instance == pi->instance;
	assert_true(aggregated);
	return metadata_service_name(pi, NULL, pi->comm, buf, size);
}

/*
 * A ring buffer that overflowed lost a child's exec record: its samples show another exec count than
 * the description it inherited at fork, so they are described from /proc (the child's own
 * environment), or by the child's name once it is gone, never with the parent's service.name.
 */
static void test_lost_exec_not_parents(void **state)
{
	struct fixture *f = *state;
	char root[] = "/tmp/otelprofd-test-procXXXXXX", buf[64];
	const uint64_t tick = 1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK);
	const uint32_t parent = 900000700, child = 900000701, gone_child = 900000702, late_child = 900000703;
	struct process_table *t;
	struct record_path *rp, *own = f->rp;
	const struct process_table_counters *c;
	uint64_t before;

	assert_non_null(mkdtemp(root));
	t = process_table_new(&(struct process_table_config){ .proc_root = root });
	rp = record_path_new(&(struct record_path_config){ .sym = f->sym, .processes = t, .agg = f->agg });
	assert_non_null(t);
	assert_non_null(rp);
	f->rp = rp;
	fake_process(root, parent, 100, "storm-driver");
	handle_proc_event(rp, OTELPROF_RECORD_EXEC, parent, 100 * tick, 0, 0, 1);
	assert_string_equal(sample_service(f, t, parent, 100 * tick, 1, 0, buf, sizeof(buf)), "storm-driver");

	/* Forked: the parent's program and environment, until it execs. */
	fake_process(root, child, 101, "storm-driver");
	handle_proc_event(rp, OTELPROF_RECORD_FORK, child, 101 * tick, parent, 100 * tick, 1);
	assert_string_equal(sample_service(f, t, child, 101 * tick, 1, 0, buf, sizeof(buf)), "storm-driver");
	/* Its exec record is lost; /proc says what it runs now. */
	fake_process(root, child, 101, "storm-7");
	assert_string_equal(sample_service(f, t, child, 101 * tick, 2, 0, buf, sizeof(buf)), "storm-7");
	assert_string_equal(sample_service(f, t, child, 101 * tick, 2, 0, buf, sizeof(buf)), "storm-7");

	/* The same, but the child is gone before its sample is read: its name, not the parent's. */
	handle_proc_event(rp, OTELPROF_RECORD_FORK, gone_child, 102 * tick, parent, 100 * tick, 1);
	assert_string_equal(sample_service(f, t, gone_child, 102 * tick, 2, 0, buf, sizeof(buf)), "st7");

	/* The parent exec'd too and that record was lost: a child it forks since inherits nothing,
	 * and is read from /proc at its first sample. */
	fake_process(root, late_child, 103, "storm-9");
	handle_proc_event(rp, OTELPROF_RECORD_FORK, late_child, 103 * tick, parent, 100 * tick, 2);
	assert_null(process_table_find(t, late_child, 103 * tick)->service_name);
	assert_string_equal(sample_service(f, t, late_child, 103 * tick, 2, 0, buf, sizeof(buf)), "storm-9");

	/* A sample taken in the kernel during the execve (the exec counted, its record not sent yet):
	 * the new program's instance, read once its record comes (not a second instance). */
	fake_process(root, child, 101, "storm-8");
	assert_string_equal(sample_service(f, t, child, 101 * tick, 3, OTELPROF_SAMPLE_KERNEL_MODE, buf, sizeof(buf)),
			    "st7");
	before = process_table_find(t, child, 101 * tick)->instance;
	handle_proc_event(rp, OTELPROF_RECORD_EXEC, child, 101 * tick, 0, 0, 3);
	assert_int_equal(process_table_find(t, child, 101 * tick)->instance, before);
	assert_string_equal(sample_service(f, t, child, 101 * tick, 3, 0, buf, sizeof(buf)), "storm-8");

	c = process_table_counters(t);
	assert_int_equal(c->exec_unrecorded, 3);
	assert_int_equal(c->exec_record_late, 1);
	assert_int_equal(c->exec_unrecorded_unknown, 1);
	assert_int_equal(c->fork_uninherited, 1);
	assert_int_equal(c->execs, 2);

	f->rp = own;
	record_path_free(rp);
	process_table_free(t);
	gone(root, parent);
	gone(root, child);
	gone(root, late_child);
	rmdir(root);
}

static int published;

static int count_publish(void *ctx, uint32_t pid, uint64_t start_ns, const struct otelprof_python_proc *entry)
{
	(void)ctx, (void)pid, (void)start_ns;
	published += entry != NULL;
	return 0;
}

/* Python's interpreter is looked for at a process's first records whichever their kind: with
 * --off-cpu most Python processes' first records are switch-outs (threads taking turns at the GIL),
 * and a look at on-CPU samples only missed them all (native frames only). */
static void test_python_found_at_switch_outs(void **state)
{
	struct fixture *f = *state;
	struct agg_limits limits = { 100, 1 << 20, 1000 };
	struct aggregate *agg = aggregate_new(&limits);
	struct off_cpu *oc = off_cpu_new(&(struct off_cpu_config){ .agg = agg, .probability = 1, .max_pending = 16 });
	struct record_path *rp = record_path_new(&(struct record_path_config){
		.sym = f->sym, .processes = f->processes, .agg = agg, .off_cpu = oc, .python_publish = count_publish });
	int to_child[2];
	pid_t python;
	struct otelprof_sample s;
	uint64_t start_ns = 0;

	assert_non_null(rp);
	assert_int_equal(pipe(to_child), 0);
	python = fork();
	if (python == 0) {
		dup2(to_child[0], 0);
		close(to_child[1]);
		execl("/usr/bin/python3", "python3", "-c", "import sys; sys.stdin.read()", (char *)NULL);
		_exit(127);
	}
	close(to_child[0]);
	assert_true(python > 0);
	/* Its interpreter mapped: it waits on stdin once its maps name libpython's or python3's file. */
	for (int i = 0; i < 200 && !published; i++) {
		usleep(20000);
		if (start_ns || !process_start_ns("/proc", (uint32_t)python, &start_ns)) {
			s = sample_record((uint32_t)python, (uint32_t)python, 0, "python3", "python3");
			s.hdr.kind = OTELPROF_RECORD_OFF_CPU;
			s.time_ns = 1000 + (uint64_t)i;
			s.process_start_ns = start_ns;
			record_path_handle(rp, &s, sizeof(s));
		}
	}
	assert_int_equal(published, 1);
	assert_int_equal(record_path_python_counters(rp)->found, 1);
	close(to_child[1]);
	waitpid(python, NULL, 0);
	record_path_free(rp);
	off_cpu_free(oc);
	aggregate_free(agg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_sample_reaches_aggregate),
		cmocka_unit_test(test_exec_settles),
		cmocka_unit_test(test_lost_exec_not_parents),
		cmocka_unit_test(test_python_found_at_switch_outs),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
