/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Part of profile.bpf.c's object (included in it before the process life events: their exit ends a
 * wait still in flight): it uses that object's ring buffer, filters, pid translation and stack copy. */
/*
 * Off-CPU (--off-cpu): where threads wait. Loaded and attached only with --off-cpu, so the on-CPU
 * path costs the same without it.
 *
 * At a switch-out, a task is sampled with probability off_cpu_sample / 2^32, decided before any
 * other work so an unsampled switch costs a random number and a counter. A sampled target task has
 * its stacks taken right there, as an on-CPU sample would (kernel stack, frame-pointer user stack,
 * user registers and the --stack-copy window), goes into the in-flight map, and when it runs again
 * an end record carries the time it was away. User space scales each wait by the inverse of the
 * probability, so totals stay unbiased.
 */
const volatile __u32 off_cpu_sample = 0; /* switch-outs with bpf_get_prandom_u32() < this are sampled;
					    UINT32_MAX: every one */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OTELPROF_OFF_CPU_INFLIGHT); /* --off-cpu-max-inflight, set before load */
	__type(key, __u32); /* tid */
	__type(value, struct otelprof_off_cpu_start);
} off_cpu_inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OTELPROF_OFFCPU_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} off_cpu_counters SEC(".maps");

/* Its own scratch: a perf event (NMI) can interrupt the switch on the same CPU and use "scratch". */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set to the number of possible CPUs by user space with --off-cpu */
	__type(key, __u32);
	__type(value, struct sample_buf);
} off_cpu_scratch SEC(".maps");

/* The off-CPU counters live apart from "counters" so either side's list can grow on its own. */
#define off_cpu_count(which) add_to_counter(&off_cpu_counters, which)

/* Kernel frames above the scheduler in a tp_btf program's stack: the program, bpf_trace_run*(). */
#define OFF_CPU_SKIP_FRAMES 2


/* Thread tid, sampled when it left a CPU, runs again at now: say how long it was away. */
static __always_inline void off_cpu_end_of(__u32 tid, __u64 now, __u32 cpu)
{
	struct otelprof_off_cpu_start *start = tid ? bpf_map_lookup_elem(&off_cpu_inflight, &tid) : NULL;
	struct otelprof_off_cpu_end *e;
	__u64 start_ns;
	__u32 pid;

	if (!start)
		return;
	start_ns = start->start_ns;
	pid = start->pid;
	bpf_map_delete_elem(&off_cpu_inflight, &tid);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		off_cpu_count(OTELPROF_OFFCPU_CNT_RINGBUF_FULL);
		return;
	}
	e->hdr.kind = OTELPROF_RECORD_OFF_CPU_END;
	e->hdr.size = sizeof(*e);
	e->start_ns = start_ns;
	e->end_ns = now;
	e->pid = pid;
	e->tid = tid;
	e->cpu = cpu;
	e->reserved = 0;
	bpf_ringbuf_submit(e, wakeup_flags(false));
	off_cpu_count(OTELPROF_OFFCPU_CNT_ENDS);
}

/* The task that runs again was sampled when it left. */
static __always_inline void off_cpu_end(struct task_struct *next, __u64 now, __u32 cpu)
{
	off_cpu_end_of(pidns_tid_of(next), now, cpu);
}

/*
 * Thread tid (the current task) exits: it runs, so a wait of it still in flight lost its end. Seen
 * under load: the program did not run for a thread's switch-in (no sched_switch call for it reached
 * us, though it ran and exited); its entry then stayed, and the end of the run counted the wait up
 * to it (a 1.5 s sleep of a child that exited at once counted 4 s). The exit bounds the wait: it
 * ends here, and is counted apart. Called by on_exit (the sched_process_exit program).
 */
static __always_inline void off_cpu_exit(__u32 tid)
{
	if (!tid || !bpf_map_lookup_elem(&off_cpu_inflight, &tid))
		return;
	off_cpu_count(OTELPROF_OFFCPU_CNT_ENDS_AT_EXIT);
	off_cpu_end_of(tid, bpf_ktime_get_ns(), bpf_get_smp_processor_id());
}

/* prev (the current task) leaves the CPU and was sampled: its stacks, then the in-flight entry. */
static __always_inline void off_cpu_start(void *ctx, struct task_struct *prev, __u64 now, __u32 cpu)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid, tail = 0;
	struct otelprof_off_cpu_start start = { .start_ns = now };
	struct otelprof_sample *s;
	struct sample_buf *b;
	__u32 weight;
	long n;

	if (!BPF_CORE_READ(prev, mm) || !pidns_current(&pid, &tid) || !is_target(pid) || !in_target_cgroup()) {
		off_cpu_count(OTELPROF_OFFCPU_CNT_FILTERED);
		return;
	}
	/* Over the daemon's CPU ceiling, as on-CPU samples (cpu_shed.bpf.h, the same counters): 1 wait
	 * in N kept, its time counted N times; none while the second's share is spent. A shed one
	 * takes no in-flight entry, so its end record is not sent either. */
	weight = cpu_shed_weight();
	if (!weight) {
		off_cpu_count(OTELPROF_OFFCPU_CNT_SHED);
		return;
	}
	b = bpf_map_lookup_elem(&off_cpu_scratch, &cpu);
	if (!b)
		return;
	start.pid = pid;
	/* Full map: no stack is taken for a wait that could not be timed. */
	if (bpf_map_update_elem(&off_cpu_inflight, &tid, &start, BPF_ANY)) {
		off_cpu_count(OTELPROF_OFFCPU_CNT_INFLIGHT_FULL);
		return;
	}
	s = &b->s;
	fill_sample_header(s, OTELPROF_RECORD_OFF_CPU, now, prev, pid, tid, cpu);
	s->weight = weight;

	/* Skip this program and bpf_trace_run*(): the leaf is the scheduler (__schedule). */
	n = bpf_get_stack(ctx, s->kernel_ips, sizeof(s->kernel_ips), OFF_CPU_SKIP_FRAMES);
	if (n < 0) {
		s->flags |= OTELPROF_SAMPLE_KSTACK_ERROR;
		n = 0;
	}
	s->kernel_depth = n / sizeof(__u64);
	if (s->kernel_depth)
		s->flags |= OTELPROF_SAMPLE_KERNEL_MODE;
	s->user_depth = 0;
	if (stack_copy && saved_user_regs(prev, &b->w)) {
		tail = copy_stack(b);
		b->w.requested = stack_copy;
		s->flags |= OTELPROF_SAMPLE_STACK_WINDOW;
		tail += sizeof(b->w);
	}
	if (!window_whole(b)) {
		n = bpf_get_stack(ctx, s->user_ips, sizeof(s->user_ips), BPF_F_USER_STACK);
		if (n < 0) {
			s->flags |= OTELPROF_SAMPLE_USTACK_ERROR;
			n = 0;
		}
		s->user_depth = n / sizeof(__u64);
	}
	if (tail > sizeof(b->w) + OTELPROF_MAX_STACK_COPY)
		tail = 0;
	s->hdr.size = sizeof(*s) + tail;
	if (bpf_ringbuf_output(&events, b, sizeof(*s) + tail, wakeup_flags(false))) {
		/* No stack to join: forget the wait. */
		bpf_map_delete_elem(&off_cpu_inflight, &tid);
		off_cpu_count(OTELPROF_OFFCPU_CNT_RINGBUF_FULL);
		return;
	}
	off_cpu_count(OTELPROF_OFFCPU_CNT_STARTS);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();

	if (BPF_CORE_READ(next, pid))
		off_cpu_end(next, now, cpu);
	off_cpu_count(OTELPROF_OFFCPU_CNT_SWITCHES);
	if (!BPF_CORE_READ(prev, pid))
		return 0;
	if (off_cpu_sample != 0xffffffff && bpf_get_prandom_u32() >= off_cpu_sample)
		return 0;
	off_cpu_count(OTELPROF_OFFCPU_CNT_SAMPLED);
	off_cpu_start(ctx, prev, now, cpu);
	return 0;
}
