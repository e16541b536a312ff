/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Allocations (--alloc): programs for the USDT probes otel_memory:alloc(ptr, size, weight) and
 * otel_memory:free(ptr) that a process's sampler library fires (libotelprofd-alloc.so, or any other
 * that fires them: docs/allocations.md). Part of profile.bpf.c's object (included at its end): they
 * share its ring buffer, filters and stack copy, so an allocation's stack takes the on-CPU samples'
 * path in user space. Loaded and attached only with --alloc; the probes are attached per file that
 * defines them (user space finds them), so processes without such a file cost nothing.
 *
 * The probe runs in the allocating thread, in user mode: its registers are the user registers, the
 * kernel stack is empty. A sampled allocation is already rare (one per 512 KiB by default), so
 * every one that passes the filters is sent.
 */
#include <bpf/usdt.bpf.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OTELPROF_ALLOC_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} alloc_counters SEC(".maps");

/*
 * Its own scratch: a perf event (NMI) may interrupt a probe and use "scratch". busy marks an entry
 * in use: a uprobe program can be preempted, and another probe on the same CPU finding its entry
 * busy drops its sample (counted) rather than mix two.
 */
struct alloc_buf {
	struct sample_buf b;
	__u32 busy;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set to the number of possible CPUs by user space with --alloc */
	__type(key, __u32);
	__type(value, struct alloc_buf);
} alloc_scratch SEC(".maps");

#define alloc_count(which) add_to_counter(&alloc_counters, which)

/* The current task is profiled (its ids as records carry them in *pid, *tid); else counted in
 * filtered. */
static __always_inline bool alloc_target(__u32 *pid, __u32 *tid, __u32 filtered)
{
	if (pidns_current(pid, tid) && is_target(*pid) && in_target_cgroup())
		return true;
	alloc_count(filtered);
	return false;
}

SEC("usdt")
int BPF_USDT(on_alloc, __u64 ptr, __u64 size, __u64 weight)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid, cpu = bpf_get_smp_processor_id();
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct otelprof_alloc *a;
	struct alloc_buf *ab;
	struct sample_buf *b;
	__u64 tail = 0, flags;
	long n;

	alloc_count(OTELPROF_ALLOC_CNT_ALLOCS);
	/* In a daemon's own PID namespace, pids as its /proc shows them; a task outside it is not its. */
	if (!alloc_target(&pid, &tid, OTELPROF_ALLOC_CNT_FILTERED))
		return 0;
	ab = bpf_map_lookup_elem(&alloc_scratch, &cpu);
	if (!ab)
		return 0;
	/* Migration is off while a program runs, so only a task preempting this one on this CPU can
	 * find the entry: a plain load and store leave a window of two instructions to it (an atomic
	 * exchange would need -mcpu=v3 for the whole object). */
	if (*(volatile __u32 *)&ab->busy) {
		alloc_count(OTELPROF_ALLOC_CNT_SCRATCH_BUSY);
		return 0;
	}
	*(volatile __u32 *)&ab->busy = 1;
	b = &ab->b;
	fill_sample_header(&b->s, OTELPROF_RECORD_ALLOC, bpf_ktime_get_ns(), task, pid, tid, cpu);
	b->s.kernel_depth = 0;
	b->s.user_depth = 0;
#if defined(__TARGET_ARCH_x86)
	if (stack_copy) {
		b->w.ip = PT_REGS_IP(ctx);
		b->w.sp = PT_REGS_SP(ctx);
		b->w.bp = PT_REGS_FP(ctx);
		tail = copy_stack(b);
		b->w.requested = stack_copy;
		b->s.flags |= OTELPROF_SAMPLE_STACK_WINDOW;
		tail += sizeof(b->w);
	}
#endif
	if (!window_whole(b)) {
		n = bpf_get_stack(ctx, b->s.user_ips, sizeof(b->s.user_ips), BPF_F_USER_STACK);
		if (n < 0) {
			b->s.flags |= OTELPROF_SAMPLE_USTACK_ERROR;
			n = 0;
		}
		b->s.user_depth = n / sizeof(__u64);
	}
	/* The allocation's fields end the record, after the window. */
	barrier_var(tail);
	if (tail > sizeof(b->w) + OTELPROF_MAX_STACK_COPY)
		tail = 0;
	a = (struct otelprof_alloc *)((__u8 *)&b->w + tail);
	a->ptr = ptr;
	a->size = size;
	a->weight = weight;
	tail += sizeof(*a);
	barrier_var(tail);
	if (tail > sizeof(b->w) + OTELPROF_MAX_STACK_COPY + sizeof(*a))
		tail = 0;
	b->s.hdr.size = sizeof(b->s) + tail;
	flags = wakeup_flags(first_sample(pid, b->s.process_start_ns));
	/* Packed as an on-CPU sample is: the 2,032 bytes of kernel_ips and user_ips are mostly unused
	 * here (no kernel frames; no frame-pointer walk when the window holds the whole stack), more
	 * than the window itself. */
	if (packed_samples ? send_packed_sample(b, tail, flags) : bpf_ringbuf_output(&events, b, sizeof(b->s) + tail, flags))
		alloc_count(OTELPROF_ALLOC_CNT_RINGBUF_FULL);
	else
		alloc_count(OTELPROF_ALLOC_CNT_SENT);
	*(volatile __u32 *)&ab->busy = 0;
	return 0;
}

SEC("usdt")
int BPF_USDT(on_free, __u64 ptr)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct otelprof_free *f;

	alloc_count(OTELPROF_ALLOC_CNT_FREES);
	if (!alloc_target(&pid, &tid, OTELPROF_ALLOC_CNT_FREES_FILTERED))
		return 0;
	f = bpf_ringbuf_reserve(&events, sizeof(*f), 0);
	if (!f) {
		alloc_count(OTELPROF_ALLOC_CNT_FREES_RINGBUF_FULL);
		return 0;
	}
	f->hdr.kind = OTELPROF_RECORD_FREE;
	f->hdr.size = sizeof(*f);
	f->time_ns = bpf_ktime_get_ns();
	f->start_ns = BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), group_leader, start_boottime);
	f->ptr = ptr;
	f->pid = pid;
	f->tid = tid;
	bpf_ringbuf_submit(f, wakeup_flags(false));
	alloc_count(OTELPROF_ALLOC_CNT_FREES_SENT);
	return 0;
}
