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
#include "pidns.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by user space before load. */
const volatile bool filter_pids = false;     /* keep only pids in target_pids */
const volatile bool follow_children = false; /* add children of target pids to target_pids */
const volatile bool include_idle = false;    /* keep samples of the idle task (pid 0) */
const volatile bool filter_cgroups = false;  /* keep only tasks in (or below) a cgroup of target_cgroups */
const volatile bool track_processes = false; /* send exec, fork and exit records of kept processes */
const volatile __u32 stack_copy = 0;         /* bytes of user stack copied per sample (0: none) */
const volatile __u64 wakeup_bytes = 0;       /* wake user space once this much is waiting (0: every record) */
const volatile bool trace_context = false;   /* read the OTEP 4947 thread context of processes in trace_procs */
const volatile bool python_frames = false;   /* walk the CPython frames of processes in trace_procs */
const volatile bool go_labels = false;       /* read the goroutine labels of processes in go_procs */

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
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OTELPROF_MAX_TARGET_CGROUPS);
	__type(key, __u64);  /* cgroup v2 id */
	__type(value, __u8); /* 1 */
} target_cgroups SEC(".maps");

/*
 * Processes sampled since their exec. Their first sample wakes user space at once, so that their /proc
 * files are read while they still live (a short one may have exited by the next drain). That sample
 * is often still in the dynamic loader, before the libraries are mapped: user space reads the maps
 * again shortly after an exec as well (EXEC_SETTLE_MS, daemon/sampling/record_path.h). LRU: a
 * process pushed out only costs one more wakeup.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);   /* pid (thread group id) */
	__type(value, __u64); /* the process's start time (CLOCK_BOOTTIME ns): a reused pid is new */
} sampled SEC(".maps");

/* Processes whose threads may publish an OTEP 4947 thread context, and where it lives
 * (daemon/process/trace_table.c), or that run CPython, and where its frames are
 * (runtimes/python/python_table.c): one entry per process for both, so every other process costs
 * one lookup per sample. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OTELPROF_MAX_TRACE_PROCS);
	__type(key, __u32); /* pid (thread group id) */
	__type(value, struct otelprof_trace_proc);
} trace_procs SEC(".maps");

/* The Python walk on_cpu_sample tail-calls for Python processes: py_walk_loop or
 * py_walk_bounded, whichever user space loaded (runtimes/python/python_walk.c). A program of its
 * own: the verifier checks the walk once, not once per path of the sampler that leads to it, and
 * other processes never run its code. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} python_walker SEC(".maps");

/* Go processes and their runtime's offsets (runtimes/go/go_process.c), and the program that reads
 * their goroutine labels (go_read_labels), tail-called by on_cpu_sample for them only. LRU: a
 * process pushed out loses its labels until user space sees it again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, OTELPROF_MAX_GO_PROCS);
	__type(key, __u32); /* pid (thread group id) */
	__type(value, struct otelprof_go_proc);
} go_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} go_labeler SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OTELPROF_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/*
 * The sample is built here: it is too large for the 512-byte BPF stack. One entry per CPU, indexed by
 * the CPU (a perf event program does not nest on its CPU); a plain array because per-CPU values are
 * limited to 32 KiB. The stack area has a page of slack so the verifier can bound every page read.
 */
static __always_inline void count(enum otelprof_counter which);
#include "python.bpf.h"
#include "go_labels.bpf.h"
#include "cpu_shed.bpf.h"

/* Bytes of the largest Python tail; the Go labels' tail (never with Python frames) fits in it. */
#define PYTHON_TAIL_MAX (OTELPROF_PYTHON_MAX_SLOTS * sizeof(struct otelprof_python_frame))
_Static_assert(sizeof(struct otelprof_go_labels) <= PYTHON_TAIL_MAX, "the Go labels' tail must fit");

struct sample_buf {
	struct otelprof_sample s;
	struct otelprof_stack_window w;
	/* The stack window, then the Python tail, then the thread context (within the page of slack). */
	__u8 stack[OTELPROF_MAX_STACK_COPY + OTELPROF_STACK_PAGE + PYTHON_TAIL_MAX];
	struct py_walk py; /* the Python walk's frame buffer, and what on_cpu_sample tells it */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set to the number of possible CPUs by user space */
	__type(key, __u32);
	__type(value, struct sample_buf);
} scratch SEC(".maps");

/* Add one to counter key of a per-CPU counter array. */
static __always_inline void add_to_counter(void *map, __u32 key)
{
	__u64 *value = bpf_map_lookup_elem(map, &key);

	if (value)
		*value += 1;
}

static __always_inline void count(enum otelprof_counter which)
{
	add_to_counter(&counters, which);
}

/*
 * Samples, forks and exits do not wake user space, which drains the buffer on a timer: one wakeup per
 * record would cost a context switch per sample. A buffer filling up wakes it at once; so do an exec and
 * a process's first sample (wake_now), because its /proc files must be read while the process is alive.
 */
static __always_inline __u64 wakeup_flags(bool wake_now)
{
	if (!wakeup_bytes || wake_now || bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/* The first sample of this process since it started or exec'd (and records it as seen). */
static __always_inline bool first_sample(__u32 pid, __u64 start_ns)
{
	__u64 *seen = bpf_map_lookup_elem(&sampled, &pid);

	if (seen && *seen == start_ns)
		return false;
	bpf_map_update_elem(&sampled, &pid, &start_ns, BPF_ANY);
	return true;
}

static __always_inline bool is_target(__u32 pid)
{
	return !filter_pids || bpf_map_lookup_elem(&target_pids, &pid);
}

/* The current task's cgroup, or one of its ancestors, is a target: sub-cgroups of a pod or a
 * container match too. */
static __always_inline bool in_target_cgroup(void)
{
	if (!filter_cgroups)
		return true;
	for (int level = 0; level < OTELPROF_MAX_CGROUP_LEVELS; level++) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(level);

		if (!id)
			break;
		if (bpf_map_lookup_elem(&target_cgroups, &id))
			return true;
	}
	return false;
}

/* The x86-64 user code segment selector (__USER_CS); 32-bit tasks run with another one. */
#define USER64_CS 0x33

/*
 * The user registers a task saved on entering the kernel (a sample that hit kernel mode, or a task
 * leaving the CPU to wait or preempted). false when they cannot be read, or the task runs 32-bit code.
 */
static __always_inline bool saved_user_regs(struct task_struct *task, struct otelprof_stack_window *w)
{
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	if (!regs || BPF_CORE_READ(regs, cs) != USER64_CS)
		return false;
	w->ip = BPF_CORE_READ(regs, ip);
	w->sp = BPF_CORE_READ(regs, sp);
	w->bp = BPF_CORE_READ(regs, bp);
	return w->sp != 0;
#else
	return false; /* CFI unwinding is implemented for x86-64 only */
#endif
}

/*
 * The user registers of the sample: the interrupted state when the sample hit user mode, else the
 * registers the task saved on entering the kernel. false when they cannot be read, or the task runs
 * 32-bit code (its samples keep the frame-pointer stack).
 */
static __always_inline bool user_regs(struct bpf_perf_event_data *ctx, struct otelprof_stack_window *w)
{
#if defined(__TARGET_ARCH_x86)
	/* The context allows only whole 8-byte loads of a register, and newer kernels name the low 16
	 * bits of this slot cs (a union with csx): load the slot itself. */
	__u64 cs = *(volatile __u64 *)&ctx->regs.cs;
	if ((cs & 3) == 3) {
		/* Only 64-bit code: the unwinder knows x86-64 CFI and 8-byte stack slots. */
		if ((cs & 0xffff) != USER64_CS)
			return false;
		w->ip = ctx->regs.ip;
		w->sp = ctx->regs.sp;
		w->bp = ctx->regs.bp;
		return true;
	}
	return saved_user_regs(bpf_get_current_task_btf(), w);
#else
	return false; /* CFI unwinding is implemented for x86-64 only */
#endif
}

#include "packed_sample.bpf.h"

/*
 * Where each thread's stack ends, learned from a copy that ran into an unreadable page. A failed user
 * read costs the fault path, about 6 us on our test machine: more than the rest of a sample together,
 * and every window of a thread whose stack is shallower than --stack-copy used to pay it. Kept for
 * STACK_TOP_TTL_NS, then learned again, so a page that was unreadable for another reason (swapped
 * out) cuts that thread's windows for one second at most. Keyed by tid, checked against the thread's
 * start time, so a reused tid does not inherit a stranger's top.
 */
#define STACK_TOP_TTL_NS 1000000000ULL

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384); /* threads remembered; the least recently used is forgotten */
	__type(key, __u32);
	__type(value, struct otelprof_stack_top);
} stack_tops SEC(".maps");

/* Bytes from sp that can be read, as far as a remembered top says: at most want. */
static __always_inline __u32 stack_readable(__u32 tid, __u64 thread_start, __u64 now, __u64 sp, __u32 want)
{
	struct otelprof_stack_top *t = bpf_map_lookup_elem(&stack_tops, &tid);

	if (!t || t->thread_start != thread_start || now - t->learned_ns > STACK_TOP_TTL_NS || t->top <= sp ||
	    t->top - sp >= want)
		return want;
	count(OTELPROF_CNT_STACK_TOP_USED);
	return (__u32)(t->top - sp);
}

/*
 * A main thread's frames all lie below its process's start of stack (mm->start_stack, where argc
 * lies: _start's frame is the outermost, and it has no caller); above it are the argument and
 * environment pointers, the auxiliary vector and their strings, 3-8 KB that no unwind reads. So a
 * main thread's window stops MAIN_STACK_SLACK bytes past it, from its first sample, before its top
 * is learned by a failed read or set by the unwinder (stack_need.h): most of a short-lived
 * single-threaded program's samples (a compiler's) come before then. A sp not within want bytes
 * below the start of stack (a coroutine's, a goroutine's stack) is left alone. Without a branch, as
 * window_ask(): the verifier then walks the copy once (6,083 instructions for the program, against
 * 8,160 with an if).
 */
#define MAIN_STACK_SLACK 64

static __always_inline __u32 main_stack_readable(struct sample_buf *b, __u64 sp, __u32 want)
{
	__u64 id = bpf_get_current_pid_tgid(), start, limit, use;
	__u32 key = OTELPROF_CNT_STACK_MAIN_TOP;
	__u64 *value;

	start = BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), mm, start_stack);
	limit = start + MAIN_STACK_SLACK - sp;
	/* 1 for a main thread (tid == pid) whose sp lies below its start of stack (sp - start < 0),
	 * by less than want (limit - want < 0); 0 otherwise. */
	use = ((__u64)((__u32)id ^ (__u32)(id >> 32)) - 1) >> 63;
	use &= (limit - want) >> 63;
	use &= (sp - start) >> 63;
	value = bpf_map_lookup_elem(&counters, &key);
	if (value)
		*value += use;
	b->s.flags |= (__u32)use * OTELPROF_SAMPLE_WINDOW_AT_START;
	return (__u32)(want - use * (want - (__u32)limit));
}

/*
 * Copy up to stack_copy bytes of the user stack from sp upward, page by page: the first read ends at
 * sp's page boundary, and a page that cannot be read (the top of the stack mapping) ends the copy
 * with what was read so far, and is remembered as the thread's top. Returns the bytes copied (also
 * left in b->w.size).
 *
 * The offset lives in the map value, not in a register: read back from memory it is a bounded
 * unknown to the verifier, so every path through an iteration ends in the same state and is pruned.
 * Kept in a register, each path carried its own exact offset and the verifier walked the rest of the
 * program once per path: 115,000 instructions and 90 ms of the kernel's CPU at every start.
 */
static __always_inline __u32 copy_stack_upto(struct sample_buf *b, __u32 want)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 thread_start = BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), start_boottime);
	__u64 now = bpf_ktime_get_ns(), failed = 0;

	if (want > OTELPROF_MAX_STACK_COPY)
		want = OTELPROF_MAX_STACK_COPY;
	want = stack_readable(tid, thread_start, now, b->w.sp, want);
	want = main_stack_readable(b, b->w.sp, want);
	b->w.size = 0;
	for (int i = 0; i <= OTELPROF_MAX_STACK_COPY / OTELPROF_STACK_PAGE; i++) {
		__u64 off = *(volatile __u32 *)&b->w.size;
		__u64 addr = b->w.sp + off;
		__u64 chunk = OTELPROF_STACK_PAGE - (addr & (OTELPROF_STACK_PAGE - 1));

		if (off >= want)
			break;
		if (chunk > want - off)
			chunk = want - off;
		/* Bounds the verifier can see: off <= MAX, chunk <= PAGE, the buffer has MAX + PAGE. The
		 * compiler knows both hold and drops the test unless barrier_var() hides the values: then
		 * the size register carried only want - off's range, and off + (want - off) fit the
		 * buffer only for want up to half of it (--stack-copy 32KiB; 64KiB was refused). 64-bit,
		 * so the test reads the very register passed to the helper, not a zero-extended copy. */
		barrier_var(off);
		barrier_var(chunk);
		if (off > OTELPROF_MAX_STACK_COPY || chunk > OTELPROF_STACK_PAGE)
			break;
		if (bpf_probe_read_user(b->stack + off, chunk, (const void *)addr)) {
			failed = off ? addr : 0; /* sp itself unreadable: nothing learned */
			break;
		}
		b->w.size = off + chunk;
	}
	if (failed) {
		struct otelprof_stack_top t = { .top = failed, .thread_start = thread_start, .learned_ns = now };

		bpf_map_update_elem(&stack_tops, &tid, &t, BPF_ANY);
		count(OTELPROF_CNT_STACK_TOP_LEARNED);
	}
	want = *(volatile __u32 *)&b->w.size;
	return want <= OTELPROF_MAX_STACK_COPY ? want : 0; /* always true: shows the verifier the bound */
}

/* copy_stack_upto() of --stack-copy bytes. */
static __always_inline __u32 copy_stack(struct sample_buf *b)
{
	return copy_stack_upto(b, stack_copy);
}

/*
 * The bytes an on-CPU sample's window asks for: --stack-copy, or PRESSURE_STACK_COPY while the ring
 * buffer is more than half full (user space is behind: a burst of new processes to read, a module
 * being opened). A thread whose windows are sized by need (daemon/sampling/stack_need.h) asks for
 * less anyway; another one's window then holds its innermost frames (its walk is truncated) instead
 * of the sample being dropped when the buffer fills.
 */
#define PRESSURE_STACK_COPY 2048

static __always_inline __u32 window_ask(void)
{
	__u32 key = OTELPROF_CNT_STACK_PRESSURE;
	__u64 over, *value;

	if (stack_copy <= PRESSURE_STACK_COPY || !wakeup_bytes)
		return stack_copy;
	/* Without a branch (1 when over half full): the verifier walks the rest of the program once,
	 * not once for each size (3,500 instructions more with an if). */
	over = (2 * wakeup_bytes - 1 - bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA)) >> 63;
	value = bpf_map_lookup_elem(&counters, &key);
	if (value)
		*value += over;
	return stack_copy - (__u32)over * (stack_copy - PRESSURE_STACK_COPY);
}

/*
 * The window holds the whole stack: its copy stopped at the stack's top before the size asked.
 * Then user space unwinds it to the entry by CFI (and by frame pointers within it where CFI is
 * missing), and the kernel's frame-pointer walk is skipped: on a program built without frame
 * pointers that walk ends in a failed read and cost about 5.5 us, more than the rest of a sample.
 * A stack deeper than the window still gets the walk, whose chain may go further than the window.
 */
static __always_inline bool window_whole(const struct sample_buf *b)
{
	return (b->s.flags & OTELPROF_SAMPLE_STACK_WINDOW) && b->w.size < b->w.requested;
}

/* Registers and stack window of a user task: sets the flag and returns the bytes of the tail. */
static __always_inline __u32 add_stack_window(struct bpf_perf_event_data *ctx, struct sample_buf *b)
{
	__u32 n, ask;

	if (!stack_copy || (b->s.flags & OTELPROF_SAMPLE_KERNEL_THREAD))
		return 0;
	if (!user_regs(ctx, &b->w)) {
		count(OTELPROF_CNT_USER_REGS_ERROR);
		return 0;
	}
	ask = window_ask();
	n = copy_stack_upto(b, ask);
	b->w.requested = ask;
	b->s.flags |= OTELPROF_SAMPLE_STACK_WINDOW;
	count(OTELPROF_CNT_STACK_WINDOWS);
	if (n < ask)
		count(OTELPROF_CNT_STACK_READ_SHORT);
	{
		__u32 key = OTELPROF_CNT_STACK_BYTES;
		__u64 *value = bpf_map_lookup_elem(&counters, &key);

		if (value)
			*value += n;
	}
	return sizeof(b->w) + n;
}

/* glibc's DTV slot is 16 bytes ({ pointer, to_free }); dtv[-1].counter holds its length, and a slot
 * of a module not yet used by the thread holds TLS_DTV_UNALLOCATED. */
#define DTV_SLOT 16
#define TLS_DTV_UNALLOCATED ((__u64)-1)

/* Address of the thread's otel_thread_ctx_v1 variable, or 0 when it cannot be reached. */
static __always_inline __u64 thread_ctx_address(struct task_struct *task, const struct otelprof_trace_proc *tp)
{
#if defined(__TARGET_ARCH_x86)
	__u64 tp_addr = BPF_CORE_READ(task, thread.fsbase), dtv, len, block;

	if (!tp_addr)
		return 0;
	if (tp->mode == OTELPROF_TLS_STATIC)
		return tp_addr + tp->tp_offset;
	if (tp->mode != OTELPROF_TLS_DTV)
		return 0;
	/* tcbhead_t: { tcb, dtv, self, ... }: the DTV pointer is the second word. */
	if (bpf_probe_read_user(&dtv, sizeof(dtv), (const void *)(tp_addr + 8)) || !dtv ||
	    bpf_probe_read_user(&len, sizeof(len), (const void *)(dtv - DTV_SLOT)) || tp->module > len ||
	    bpf_probe_read_user(&block, sizeof(block), (const void *)(dtv + tp->module * DTV_SLOT)))
		return 0;
	if (!block || block == TLS_DTV_UNALLOCATED)
		return 0;
	return block + tp->offset;
#else
	return 0;
#endif
}

/*
 * The thread's context record, appended at (u8 *)&b->w + off (after the stack window, if any):
 * returns the bytes added (0: no record attached, or none readable). The header is read first and
 * the attributes only for a valid record, as OTEP 4947 reads it.
 */
static __always_inline __u32 add_trace_ctx(struct sample_buf *b, struct task_struct *task,
					   const struct otelprof_trace_proc *tp, __u32 off)
{
	struct otelprof_trace_ctx *t;
	__u64 addr, record;
	__u32 n;

	if (!trace_context || !tp || !tp->mode)
		return 0;
	if (off > sizeof(b->w) + OTELPROF_MAX_STACK_COPY + PYTHON_TAIL_MAX)
		return 0;
	t = (struct otelprof_trace_ctx *)((__u8 *)&b->w + off);
	addr = thread_ctx_address(task, tp);
	if (!addr || bpf_probe_read_user(&record, sizeof(record), (const void *)addr)) {
		count(OTELPROF_CNT_TRACE_READ_ERROR);
		return 0;
	}
	if (!record) {
		count(OTELPROF_CNT_TRACE_DETACHED);
		return 0;
	}
	if (bpf_probe_read_user(t, 28, (const void *)record)) {
		count(OTELPROF_CNT_TRACE_READ_ERROR);
		return 0;
	}
	if (t->valid != 1) {
		count(OTELPROF_CNT_TRACE_DETACHED);
		return 0;
	}
	n = t->attrs_size;
	if (n > OTELPROF_TRACE_ATTRS_MAX)
		n = OTELPROF_TRACE_ATTRS_MAX;
	/* An unreadable attrs_data keeps the link: the ids were read. */
	if (n && bpf_probe_read_user(t->attrs, n, (const void *)(record + 28)))
		n = 0;
	t->attrs_copied = n;
	t->reserved = 0;
	t->reserved2 = 0;
	b->s.flags |= OTELPROF_SAMPLE_TRACE_CTX;
	count(OTELPROF_CNT_TRACE_LINKED);
	return sizeof(*t);
}

/* The process's entry in trace_procs (thread context, CPython), or NULL: one lookup, and only when
 * either feature is on. */
static __always_inline const struct otelprof_trace_proc *process_entry(const struct sample_buf *b, __u32 pid)
{
	const struct otelprof_trace_proc *tp;

	if ((!trace_context && !python_frames) || (b->s.flags & OTELPROF_SAMPLE_KERNEL_THREAD))
		return NULL;
	tp = bpf_map_lookup_elem(&trace_procs, &pid);
	return tp && tp->start_ns == b->s.process_start_ns ? tp : NULL;
}

/*
 * The thread's Python frames, appended at (u8 *)&b->w + off: returns the bytes added. loop: walk
 * with bpf_loop() (a constant: each walk program has one form).
 */
static __always_inline __u32 add_python(struct sample_buf *b, const struct otelprof_trace_proc *tp, __u32 tid,
					__u32 off, bool loop)
{
	struct otelprof_python_frame *out;
	__u32 n;

	if (!python_frames || !tp || !tp->python.interp_head || off > sizeof(b->w) + OTELPROF_MAX_STACK_COPY)
		return 0;
	out = (struct otelprof_python_frame *)((__u8 *)&b->w + off);
	if (loop)
		n = python_stack_loop(&tp->python, tid, out, &b->py);
	else
		n = python_stack_bounded(&tp->python, tid, out, &b->py);
	if (!n || n > OTELPROF_PYTHON_MAX_SLOTS)
		return 0;
	b->s.python_slots = n;
	b->s.flags |= OTELPROF_SAMPLE_PYTHON;
	return n * sizeof(struct otelprof_python_frame);
}

/*
 * How many times the process exec'd (self_exec_id, bumped by every execve and copied at fork), low 32
 * bits: a u64 since Linux 5.7, a u32 before, the same low half on a little-endian CPU.
 */
static __always_inline __u32 exec_id_of(struct task_struct *task)
{
	struct task_struct *leader = BPF_CORE_READ(task, group_leader);
	__u32 id = 0;

	bpf_core_read(&id, sizeof(id), &leader->self_exec_id);
	return id;
}

/*
 * The end of every on-CPU sample, in on_cpu_sample or in the Python walk it tail-called: the thread
 * context after the tail so far (stack window, Python frames), then the record into the ring buffer.
 */
static __always_inline void send_sample(struct sample_buf *b, struct task_struct *task,
					const struct otelprof_trace_proc *tp, __u64 tail)
{
	struct otelprof_sample *s = &b->s;
	__u64 flags;

	/* Hidden from the compiler, which otherwise tests a narrowed copy and leaves the verifier
	 * the sum's unbounded register. */
	barrier_var(tail);
	if (tail > sizeof(b->w) + OTELPROF_MAX_STACK_COPY + PYTHON_TAIL_MAX)
		tail = 0;
	tail += add_trace_ctx(b, task, tp, (__u32)tail);
	/* The verifier must see the bound on the very register passed to the helper. */
	barrier_var(tail);
	if (tail > sizeof(b->w) + OTELPROF_MAX_STACK_COPY + PYTHON_TAIL_MAX + sizeof(struct otelprof_trace_ctx))
		tail = 0;
	flags = wakeup_flags(s->pid && first_sample(s->pid, s->process_start_ns));
	if (packed_samples) {
		if (send_packed_sample(b, tail, flags))
			count(OTELPROF_CNT_RINGBUF_FULL);
		return;
	}
	s->hdr.size = sizeof(*s) + tail;
	if (bpf_ringbuf_output(&events, b, sizeof(*s) + tail, flags))
		count(OTELPROF_CNT_RINGBUF_FULL);
}

/*
 * The fields every sample record starts with, for the current task (an on-CPU sample's, or at a
 * switch-out the task leaving the CPU, which is still current).
 */
static __always_inline void fill_sample_header(struct otelprof_sample *s, __u32 kind, __u64 now,
					       struct task_struct *task, __u32 pid, __u32 tid, __u32 cpu)
{
	s->hdr.kind = kind;
	s->time_ns = now;
	s->cgroup_id = bpf_get_current_cgroup_id();
	s->process_start_ns = BPF_CORE_READ(task, group_leader, start_boottime);
	s->pid = pid;
	s->tid = tid;
	s->cpu = cpu;
	s->flags = 0;
	s->python_slots = 0;
	s->map_count = BPF_CORE_READ(task, mm, map_count);
	s->exec_id = exec_id_of(task);
	s->weight = 0;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	BPF_CORE_READ_STR_INTO(&s->process_comm, task, group_leader, comm);
}

/* pid's entry in go_procs, when it is of this process (a reused pid's is not), or NULL. */
static __always_inline const struct otelprof_go_proc *go_process(__u32 pid, __u64 start_ns)
{
	const struct otelprof_go_proc *gp = bpf_map_lookup_elem(&go_procs, &pid);

	return gp && gp->start_ns == start_ns ? gp : NULL;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	const struct otelprof_trace_proc *tp;
	struct task_struct *task;
	struct otelprof_sample *s;
	struct sample_buf *b;
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 tail; /* 64-bit: the bound checked below is on the register passed to the helper */
	__u32 weight;
	long n;

	count(OTELPROF_CNT_SAMPLES);
	if (tid == 0 && !include_idle) {
		count(OTELPROF_CNT_IDLE);
		return 0;
	}
	if (tid && !pidns_current(&pid, &tid)) {
		count(OTELPROF_CNT_OTHER_PIDNS);
		return 0;
	}
	if (!is_target(pid)) {
		count(OTELPROF_CNT_FILTERED);
		return 0;
	}
	if (!in_target_cgroup()) {
		count(OTELPROF_CNT_CGROUP_FILTERED);
		return 0;
	}
	weight = cpu_shed_weight(); /* over the daemon's CPU ceiling: most samples end here, counted */
	if (!weight)
		return 0;

	b = bpf_map_lookup_elem(&scratch, &cpu);
	if (!b)
		return 0;
	s = &b->s;

	task = (struct task_struct *)bpf_get_current_task();
	fill_sample_header(s, OTELPROF_RECORD_SAMPLE, bpf_ktime_get_ns(), task, pid, tid, cpu);
	s->hdr.size = sizeof(*s);
	s->weight = weight;
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
	tail = add_stack_window(ctx, b);
	if (!(s->flags & OTELPROF_SAMPLE_KERNEL_THREAD) && !window_whole(b)) {
		n = bpf_get_stack(ctx, s->user_ips, sizeof(s->user_ips), BPF_F_USER_STACK);
		if (n < 0) {
			s->flags |= OTELPROF_SAMPLE_USTACK_ERROR;
			count(OTELPROF_CNT_USTACK_ERROR);
			n = 0;
		}
		s->user_depth = n / sizeof(__u64);
	}
	/* The bound the verifier needs: the tail never exceeds the window header plus the largest copy. */
	if (tail > sizeof(b->w) + OTELPROF_MAX_STACK_COPY)
		tail = 0;
	tp = process_entry(b, pid);
	if (python_frames && tp && tp->python.interp_head) {
		/* The walk sends the sample; on return the tail call failed (no walk program). */
		b->py.tail = tail;
		bpf_tail_call(ctx, &python_walker, 0);
		count(OTELPROF_CNT_PYTHON_NO_WALKER);
	}
	if (go_labels && !(s->flags & OTELPROF_SAMPLE_KERNEL_THREAD) && go_process(pid, s->process_start_ns)) {
		/* The label reader sends the sample; on return the tail call failed (none loaded). */
		b->py.tail = tail;
		bpf_tail_call(ctx, &go_labeler, 0);
		count(OTELPROF_CNT_GO_NO_READER);
	}
	send_sample(b, task, tp, tail);
	return 0;
}

/* What a program on_cpu_sample tail-calls adds to the sample. */
enum resume_part {
	RESUME_PYTHON_LOOP,    /* the Python frames, walked with bpf_loop() */
	RESUME_PYTHON_BOUNDED, /* the Python frames, walked by a bounded loop */
	RESUME_GO_LABELS,      /* the goroutine's labels */
};

/* The goroutine labels of a Go process's thread, appended at (u8 *)&b->w + off: the bytes added. */
static __always_inline __u32 add_go_labels(struct sample_buf *b, __u32 pid, struct task_struct *task, __u32 off)
{
	const struct otelprof_go_proc *gp = go_process(pid, b->s.process_start_ns);
	__u32 added;

	if (!gp || off > sizeof(b->w) + OTELPROF_MAX_STACK_COPY)
		return 0;
	added = go_labels_read(gp, BPF_CORE_READ(task, thread.fsbase), (struct otelprof_go_labels *)((__u8 *)&b->w + off));
	if (added != sizeof(struct otelprof_go_labels))
		return 0;
	b->s.flags |= OTELPROF_SAMPLE_GO_LABELS;
	return added;
}

/*
 * The rest of a sample on_cpu_sample prepared in this CPU's scratch (header, stacks, stack window,
 * b->py.tail) and tail-called a runtime's program for: that runtime's part, then the thread context
 * and the record into the ring buffer.
 */
static __always_inline int resume_sample(enum resume_part part)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u32 cpu = bpf_get_smp_processor_id();
	const struct otelprof_trace_proc *tp;
	struct sample_buf *b;
	__u64 tail;

	b = bpf_map_lookup_elem(&scratch, &cpu);
	if (!b)
		return 0;
	/* The sample's pid and tid: translated when the daemon runs in a PID namespace of its own. */
	tp = process_entry(b, b->s.pid);
	tail = b->py.tail;
	if (tail > sizeof(b->w) + OTELPROF_MAX_STACK_COPY)
		tail = 0;
	if (part == RESUME_GO_LABELS)
		tail += add_go_labels(b, b->s.pid, task, (__u32)tail);
	else
		tail += add_python(b, tp, b->s.tid, (__u32)tail, part == RESUME_PYTHON_LOOP);
	/* Through memory: the verifier then checks the rest once, not once per way the part ended. */
	b->py.tail = tail;
	tail = *(volatile __u32 *)&b->py.tail;
	send_sample(b, task, tp, tail);
	return 0;
}

SEC("perf_event")
int py_walk_loop(struct bpf_perf_event_data *ctx)
{
	return resume_sample(RESUME_PYTHON_LOOP);
}

SEC("perf_event")
int py_walk_bounded(struct bpf_perf_event_data *ctx)
{
	return resume_sample(RESUME_PYTHON_BOUNDED);
}

/* The goroutine labels of a Go process's sample (go_procs): on_cpu_sample tail-calls it. */
SEC("perf_event")
int go_read_labels(struct bpf_perf_event_data *ctx)
{
	return resume_sample(RESUME_GO_LABELS);
}

#include "off_cpu.bpf.h"

/* Send a process life event of task (the current task, or a child it just forked), pid as records
 * carry it (pidns.bpf.h), and of its parent's (parent_pid) when parent is given. */
static __always_inline void send_proc_event(enum otelprof_record_kind kind, struct task_struct *task, __u32 pid,
					    struct task_struct *parent, __u32 parent_pid, struct linux_binprm *bprm)
{
	struct otelprof_proc_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count(OTELPROF_CNT_PROC_EVENTS_LOST);
		return;
	}
	e->hdr.kind = kind;
	e->hdr.size = sizeof(*e);
	e->time_ns = bpf_ktime_get_ns();
	e->start_ns = BPF_CORE_READ(task, group_leader, start_boottime);
	e->cgroup_id = bpf_get_current_cgroup_id(); /* a child starts in its parent's cgroup */
	e->pid = pid;
	e->parent_pid = parent ? parent_pid : 0;
	e->parent_start_ns = parent ? BPF_CORE_READ(parent, group_leader, start_boottime) : 0;
	e->exec_id = exec_id_of(task);
	e->reserved = 0;
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	e->filename[0] = 0;
	if (bprm)
		bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), BPF_CORE_READ(bprm, filename));
	bpf_ringbuf_submit(e, wakeup_flags(kind == OTELPROF_RECORD_EXEC));
	count(OTELPROF_CNT_PROC_EVENTS);
}

/*
 * A new process. --follow-children: its parent is a target, so it becomes one. Process tracking:
 * user space learns the child's identity and inherits the parent's metadata.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_pid = BPF_CORE_READ(parent, tgid);
	__u32 child_pid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	if (child_pid == parent_pid) /* a thread */
		return 0;
	if (pidns_translate) {
		__u32 tid;

		/* The parent is the current task: translated first, it teaches the namespace's level. */
		if (!pidns_current_ids(&parent_pid, &tid) || !(child_pid = pidns_tgid_of(child)))
			return 0;
	}
	if (filter_pids && follow_children && bpf_map_lookup_elem(&target_pids, &parent_pid)) {
		if (bpf_map_update_elem(&target_pids, &child_pid, &one, BPF_NOEXIST) == 0)
			count(OTELPROF_CNT_CHILDREN_FOLLOWED);
		else if (!bpf_map_lookup_elem(&target_pids, &child_pid))
			count(OTELPROF_CNT_PID_TABLE_FULL);
	}
	if (track_processes && is_target(child_pid) && in_target_cgroup())
		send_proc_event(OTELPROF_RECORD_FORK, child, child_pid, parent, parent_pid, NULL);
	return 0;
}

/* A process replaced its program: user space reads its new executable and metadata. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 pid = BPF_CORE_READ(task, tgid), tid = BPF_CORE_READ(task, pid);

	if (!pidns_current(&pid, &tid))
		return 0;
	bpf_map_delete_elem(&sampled, &pid); /* a new program: its first sample wakes user space again */
	if (is_target(pid) && in_target_cgroup())
		send_proc_event(OTELPROF_RECORD_EXEC, task, pid, NULL, 0, bprm);
	return 0;
}

/*
 * A thread exits. When it is the last one of its process, user space may drop the process after its
 * last samples are built. A followed process that exits frees its filter slot so pid reuse cannot
 * make a stranger a target.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__u32 pid = BPF_CORE_READ(task, tgid), tid = BPF_CORE_READ(task, pid);

	if (!pidns_current(&pid, &tid))
		return 0;
	off_cpu_exit(tid);
	/* signal->live counts the live threads; it drops to 0 before this tracepoint for the last one. */
	if (track_processes && BPF_CORE_READ(task, signal, live.counter) == 0 && is_target(pid) &&
	    in_target_cgroup())
		send_proc_event(OTELPROF_RECORD_EXIT, task, pid, NULL, 0, NULL);
	if (!filter_pids || tid != pid) /* a thread, not the process */
		return 0;
	bpf_map_delete_elem(&target_pids, &pid);
	return 0;
}

#include "alloc.bpf.h"
