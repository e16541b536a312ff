// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * On-CPU sampler: runs on every cpu-clock perf event, keeps the samples of the target processes
 * (all of them unless a pid filter is set) and sends pid, tid, cpu, time, names and the kernel
 * and user stacks to user space through a ring buffer.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "records.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by user space before load. */
const volatile bool filter_pids = false;     /* keep only pids in target_pids */
const volatile bool follow_children = false; /* add children of target pids to target_pids */
const volatile bool include_idle = false;    /* keep samples of the idle task (pid 0) */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* resized by user space before load */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OTELPROF_MAX_TARGET_PIDS);
	__type(key, __u32);  /* pid (thread group id) */
	__type(value, __u8); /* 1 */
} target_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OTELPROF_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* The sample is built here: it is too large for the 512-byte BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct otelprof_sample);
} scratch SEC(".maps");

static __always_inline void count(enum otelprof_counter which)
{
	__u32 key = which;
	__u64 *value = bpf_map_lookup_elem(&counters, &key);

	if (value)
		*value += 1;
}

static __always_inline bool is_target(__u32 pid)
{
	return !filter_pids || bpf_map_lookup_elem(&target_pids, &pid);
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct task_struct *task;
	struct otelprof_sample *s;
	__u32 zero = 0;
	long n;

	count(OTELPROF_CNT_SAMPLES);
	if (tid == 0 && !include_idle) {
		count(OTELPROF_CNT_IDLE);
		return 0;
	}
	if (!is_target(pid)) {
		count(OTELPROF_CNT_FILTERED);
		return 0;
	}

	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;

	task = (struct task_struct *)bpf_get_current_task();
	s->hdr.kind = OTELPROF_RECORD_SAMPLE;
	s->hdr.size = sizeof(*s);
	s->time_ns = bpf_ktime_get_ns();
	s->cgroup_id = bpf_get_current_cgroup_id();
	s->pid = pid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	s->flags = 0;
	s->reserved = 0;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	BPF_CORE_READ_STR_INTO(&s->process_comm, task, group_leader, comm);
	if (!BPF_CORE_READ(task, mm))
		s->flags |= OTELPROF_SAMPLE_KERNEL_THREAD;

	n = bpf_get_stack(ctx, s->kernel_ips, sizeof(s->kernel_ips), 0);
	if (n < 0) {
		s->flags |= OTELPROF_SAMPLE_KSTACK_ERROR;
		count(OTELPROF_CNT_KSTACK_ERROR);
		n = 0;
	}
	s->kernel_depth = n / sizeof(__u64);
	if (s->kernel_depth)
		s->flags |= OTELPROF_SAMPLE_KERNEL_MODE;

	s->user_depth = 0;
	if (!(s->flags & OTELPROF_SAMPLE_KERNEL_THREAD)) {
		n = bpf_get_stack(ctx, s->user_ips, sizeof(s->user_ips), BPF_F_USER_STACK);
		if (n < 0) {
			s->flags |= OTELPROF_SAMPLE_USTACK_ERROR;
			count(OTELPROF_CNT_USTACK_ERROR);
			n = 0;
		}
		s->user_depth = n / sizeof(__u64);
	}

	if (bpf_ringbuf_output(&events, s, sizeof(*s), 0))
		count(OTELPROF_CNT_RINGBUF_FULL);
	return 0;
}

/* --follow-children: a new process whose parent is a target becomes a target. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_pid = BPF_CORE_READ(parent, tgid);
	__u32 child_pid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	if (!filter_pids || !follow_children || child_pid == parent_pid)
		return 0;
	if (!bpf_map_lookup_elem(&target_pids, &parent_pid))
		return 0;
	if (bpf_map_update_elem(&target_pids, &child_pid, &one, BPF_NOEXIST) == 0)
		count(OTELPROF_CNT_CHILDREN_FOLLOWED);
	else if (!bpf_map_lookup_elem(&target_pids, &child_pid))
		count(OTELPROF_CNT_PID_TABLE_FULL);
	return 0;
}

/* A followed process that exits frees its slot so pid reuse cannot make a stranger a target. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__u32 pid = BPF_CORE_READ(task, tgid);

	if (!filter_pids || BPF_CORE_READ(task, pid) != pid)
		return 0;
	bpf_map_delete_elem(&target_pids, &pid);
	return 0;
}
