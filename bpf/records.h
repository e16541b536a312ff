/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The records and maps shared by the BPF programs and user space. This is the one header that both
 * sides include; every field is fixed-width with explicit padding, and the size asserts at the end
 * catch an accidental layout change.
 *
 * A record in the ring buffer starts with struct otelprof_record_header; its kind says which struct
 * follows and its size how many bytes the whole record takes, so new kinds and a variable tail
 * (user registers and a copied stack window) can be added without breaking older readers.
 */
#ifndef OTELPROF_BPF_RECORDS_H
#define OTELPROF_BPF_RECORDS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define OTELPROF_COMM_LEN 16
/* Matches the kernel's default kernel.perf_event_max_stack. */
#define OTELPROF_MAX_STACK_DEPTH 127
/* Bound on the pids tracked by the in-kernel filter (targets and their followed children). */
#define OTELPROF_MAX_TARGET_PIDS 8192
/* Bound on the cgroups of the in-kernel cgroup filter (--cgroup, --container). */
#define OTELPROF_MAX_TARGET_CGROUPS 64
/* Deepest cgroup level the filter compares (the root is level 0). */
#define OTELPROF_MAX_CGROUP_LEVELS 32
/* Bytes of the executable path kept in an exec record (the rest is cut). */
#define OTELPROF_PATH_LEN 256
/* Largest user stack window copied per sample (--stack-copy), and the page size it is read by. */
#define OTELPROF_MAX_STACK_COPY 65536
#define OTELPROF_STACK_PAGE 4096
/* Bound on the processes whose OTEP 4947 thread context the BPF program reads (map trace_procs). */
#define OTELPROF_MAX_TRACE_PROCS 4096
/* Bytes of a thread context record's attrs_data copied per sample: the OTEP recommends records of at
 * most 640 bytes, 28 of them the header. */
#define OTELPROF_TRACE_ATTRS_MAX 612
/* CPython frames (docs/python.md): slots of a sample's Python tail (frames and entry markers), the
 * interpreter frames read per sample, and the thread states looked through for the sampled thread. */
#define OTELPROF_PYTHON_MAX_SLOTS 128
#define OTELPROF_PYTHON_MAX_WALK 96
#define OTELPROF_PYTHON_MAX_THREADS 64
/* Go pprof labels (docs/go.md): labels kept per sample, and bytes kept of a key or a value. */
#define OTELPROF_GO_MAX_LABELS 8
#define OTELPROF_GO_LABEL_LEN 64
/* Bound on the Go processes whose labels the BPF program reads (map go_procs, LRU). */
#define OTELPROF_MAX_GO_PROCS 4096
/* cpu_shed_keep_every (bpf/cpu_shed.bpf.h) that keeps no sample. */
#define OTELPROF_SHED_KEEP_NONE 0xffffffffu
/* An offset of struct otelprof_python_proc that the interpreter's layout does not have. */
#define OTELPROF_PYTHON_NONE 0xff

enum otelprof_record_kind {
	OTELPROF_RECORD_SAMPLE = 1, /* struct otelprof_sample */
	OTELPROF_RECORD_EXEC = 2,   /* struct otelprof_proc_event: a process called execve */
	OTELPROF_RECORD_FORK = 3,   /* struct otelprof_proc_event: a new process (not a thread) */
	OTELPROF_RECORD_EXIT = 4,   /* struct otelprof_proc_event: the last thread of a process exited */
};

/* Bits of otelprof_sample.flags. */
enum otelprof_sample_flag {
	OTELPROF_SAMPLE_KERNEL_MODE = 1 << 0,     /* the sample interrupted kernel code */
	OTELPROF_SAMPLE_KSTACK_ERROR = 1 << 1,    /* bpf_get_stack failed for the kernel stack */
	OTELPROF_SAMPLE_USTACK_ERROR = 1 << 2,    /* bpf_get_stack failed for the user stack */
	OTELPROF_SAMPLE_KERNEL_THREAD = 1 << 3,   /* the task has no user address space */
	OTELPROF_SAMPLE_STACK_WINDOW = 1 << 4,    /* a struct otelprof_stack_window tail follows */
	/* Set by user space, never by BPF: user_ips were unwound from the window and end because the
	 * window (or the depth bound) ended before the stack's entry. */
	OTELPROF_SAMPLE_USER_TRUNCATED = 1 << 5,
	/* A struct otelprof_trace_ctx ends the record (after the stack window, if any): the thread had a
	 * valid OTEP 4947 context record attached. */
	OTELPROF_SAMPLE_TRACE_CTX = 1 << 6,
	/* python_slots struct otelprof_python_frame follow the stack window (before the thread
	 * context, if any): the thread's CPython frame chain, innermost first. */
	OTELPROF_SAMPLE_PYTHON = 1 << 7,
	/* A struct otelprof_go_labels follows the stack window (before the thread context, if any):
	 * the pprof labels of the goroutine the sampled thread ran (runtimes/go/go_labels.bpf.h). */
	OTELPROF_SAMPLE_GO_LABELS = 1 << 8,
	/* Packed (bpf/packed_sample.bpf.h): the record holds the sample's first
	 * OTELPROF_SAMPLE_HEAD_SIZE bytes, then kernel_depth kernel ips, then user_depth user ips,
	 * then the tail; hdr.size counts those bytes only. User space unpacks it into a whole struct
	 * otelprof_sample and clears the bit (daemon/sampling/record_unpack.h). */
	OTELPROF_SAMPLE_PACKED = 1 << 9,
	/* The stack window ends at the process's start of stack (a main thread's: no frame lies above
	 * it), not at a top learned or sized by need: user space learns nothing from where it ends. */
	OTELPROF_SAMPLE_WINDOW_AT_START = 1 << 10,
};

/* Indices of the per-CPU counter array "counters". */
enum otelprof_counter {
	OTELPROF_CNT_SAMPLES = 0,       /* perf events that ran the program */
	OTELPROF_CNT_FILTERED,          /* samples not of a target pid */
	OTELPROF_CNT_IDLE,              /* samples of the idle task, skipped */
	OTELPROF_CNT_RINGBUF_FULL,      /* records lost because the ring buffer was full */
	OTELPROF_CNT_KSTACK_ERROR,      /* kernel stack walk failed */
	OTELPROF_CNT_USTACK_ERROR,      /* user stack walk failed */
	OTELPROF_CNT_CHILDREN_FOLLOWED, /* child processes added to the pid filter */
	OTELPROF_CNT_PID_TABLE_FULL,    /* children not followed because the pid filter was full */
	OTELPROF_CNT_CGROUP_FILTERED,   /* samples outside the target cgroups */
	OTELPROF_CNT_PROC_EVENTS,       /* exec, fork and exit records sent */
	OTELPROF_CNT_PROC_EVENTS_LOST,  /* exec, fork and exit records lost: ring buffer full */
	OTELPROF_CNT_STACK_WINDOWS,     /* samples sent with user registers and a stack window */
	OTELPROF_CNT_STACK_BYTES,       /* bytes of user stack copied into those windows */
	OTELPROF_CNT_STACK_READ_SHORT,  /* windows cut short by an unreadable page (end of stack) */
	OTELPROF_CNT_USER_REGS_ERROR,   /* no window sent: user registers unreadable, or 32-bit code */
	OTELPROF_CNT_TRACE_LINKED,      /* samples sent with a thread context record */
	OTELPROF_CNT_TRACE_DETACHED,    /* samples of a process with context whose thread had none
					   attached (NULL pointer, or valid != 1) */
	OTELPROF_CNT_TRACE_READ_ERROR,  /* thread context unreadable: TLS, pointer or record in unmapped
					   memory, or a module id beyond the thread's DTV */
	OTELPROF_CNT_PYTHON_STACKS,     /* samples sent with Python frames */
	OTELPROF_CNT_PYTHON_NO_THREAD,  /* samples of a Python process whose thread has no thread state
					   among the first OTELPROF_PYTHON_MAX_THREADS (or none yet) */
	OTELPROF_CNT_PYTHON_READ_ERROR, /* Python frame walks stopped by unreadable memory */
	OTELPROF_CNT_PYTHON_TRUNCATED,  /* Python frame walks cut by the walk or slot bound */
	OTELPROF_CNT_PYTHON_NO_WALKER,  /* samples of a Python process sent without its frames: the
					   walk program could not be tail-called (none loaded) */
	OTELPROF_CNT_STACK_TOP_LEARNED, /* windows ended by an unreadable page: the thread's stack top
					   remembered */
	OTELPROF_CNT_STACK_TOP_USED,    /* windows cut at a remembered stack top, without a failing read */
	OTELPROF_CNT_OTHER_PIDNS,       /* samples of tasks without a pid in the daemon's PID namespace, left
					   out (bpf/pidns.bpf.h) */
	OTELPROF_CNT_GO_LABELLED,       /* samples sent with their goroutine's labels */
	OTELPROF_CNT_GO_READ_ERROR,     /* Go label reads stopped by unreadable memory (g, m, labels) */
	OTELPROF_CNT_GO_LABELS_DROPPED, /* samples with labels left out: beyond OTELPROF_GO_MAX_LABELS,
					   or (Go <= 1.23) outside the label map's first bucket */
	OTELPROF_CNT_GO_LABELS_CUT,     /* labels whose key or value was cut at OTELPROF_GO_LABEL_LEN */
	OTELPROF_CNT_GO_NO_READER,      /* samples of a Go process sent without labels: the label
					   reader could not be tail-called (none loaded) */
	OTELPROF_CNT_CPU_SHED_SAMPLED,  /* samples left out in the kernel over the CPU ceiling, 1 in N kept:
					   the kept ones' weight stands for them (bpf/cpu_shed.bpf.h) */
	OTELPROF_CNT_CPU_SHED_SPENT,    /* samples left out in the kernel while the ceiling's second was
					   spent (none kept): lost, counted */
	OTELPROF_CNT_STACK_PRESSURE,    /* on-CPU windows asked for 2 KiB only, not --stack-copy: the
					   ring buffer was more than half full (bpf/profile.bpf.c) */
	OTELPROF_CNT_STACK_MAIN_TOP,    /* main threads' windows ended at the process's start of stack
					   (mm->start_stack), above which no frame lies */
	OTELPROF_CNT_MAX,
};

struct otelprof_record_header {
	__u32 kind; /* enum otelprof_record_kind */
	__u32 size; /* bytes of the whole record, header included */
};

/* One stack sample. */
struct otelprof_sample {
	struct otelprof_record_header hdr;
	__u64 time_ns;                        /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 cgroup_id;                      /* cgroup v2 id of the task */
	__u64 process_start_ns;               /* start of the process (thread group leader), CLOCK_BOOTTIME
						 ns: with pid, the process's identity across pid reuse */
	__u32 pid;                            /* thread group id (process id) in the daemon's pid namespace (pidns.bpf.h) */
	__u32 tid;                            /* thread id in the daemon's pid namespace (pidns.bpf.h) */
	__u32 cpu;                            /* logical CPU the sample was taken on */
	__u32 flags;                          /* enum otelprof_sample_flag bits */
	char comm[OTELPROF_COMM_LEN];         /* thread name */
	char process_comm[OTELPROF_COMM_LEN]; /* name of the thread group leader */
	__u16 kernel_depth;                   /* valid entries in kernel_ips, leaf first */
	__u16 user_depth;                     /* valid entries in user_ips, leaf first */
	__u16 python_slots;                   /* struct otelprof_python_frame in the Python tail
						 (OTELPROF_SAMPLE_PYTHON), else 0 */
	__u16 map_count;                      /* the process's number of mappings (mm->map_count, low 16
						 bits; 0 for a kernel thread): user space looks again for a
						 process context published late only when it changed */
	__u32 exec_id;                        /* the process's exec count (its leader's self_exec_id, low
						 32 bits): another value than its exec or fork record's means
						 the process exec'd and that record was lost */
	__u32 weight;                         /* samples this one stands for: over the CPU ceiling the
						 kernel keeps 1 sample in weight (bpf/cpu_shed.bpf.h);
						 0 or 1: itself alone */
	__u64 kernel_ips[OTELPROF_MAX_STACK_DEPTH]; /* kernel instruction pointers, leaf first */
	__u64 user_ips[OTELPROF_MAX_STACK_DEPTH];   /* user instruction pointers (frame-pointer walk) */
};

/* Bytes of struct otelprof_sample before kernel_ips: what a packed sample keeps of it as it is. */
#define OTELPROF_SAMPLE_HEAD_SIZE 96

/*
 * The variable tail of a sample with OTELPROF_SAMPLE_STACK_WINDOW: the user registers at the moment
 * of the sample (the interrupted user state, or the task's saved user registers when the sample hit
 * the kernel) and `size` bytes of the user stack from sp upward. hdr.size of the sample covers
 * sizeof(struct otelprof_sample) + sizeof(struct otelprof_stack_window) + size. Readers that do not
 * know the tail skip it (they read only sizeof(struct otelprof_sample)).
 */
struct otelprof_stack_window {
	__u64 ip;         /* user instruction pointer: exact when the sample hit user mode, else where
			     the task resumes in user space (after the system call or fault) */
	__u64 sp;         /* user stack pointer: address of stack[0] */
	__u64 bp;         /* user frame pointer register (rbp) */
	__u32 size;       /* bytes of stack that follow (<= OTELPROF_MAX_STACK_COPY) */
	__u32 requested;  /* bytes asked for (--stack-copy): size < requested means the stack's
			     mapping (or a readable page) ended first */
	/* Then size bytes: the user stack at [sp, sp + size). */
};

/*
 * Value of the map stack_tops (key: tid): where a thread's stack copies end. The BPF program learns
 * the stack's top from a copy that ran into an unreadable page (a page boundary); user space may
 * lower it to what unwinding the thread needs (daemon/sampling/stack_need.h: never a page boundary,
 * so a window's end tells which one cut it).
 */
struct otelprof_stack_top {
	__u64 top;          /* copies of this thread's stack end here */
	__u64 thread_start; /* the thread's start_boottime: another thread with the tid does not match */
	__u64 learned_ns;   /* bpf_ktime_get_ns() when it was set: it holds STACK_TOP_TTL_NS */
};

/*
 * The tail of a sample with OTELPROF_SAMPLE_TRACE_CTX: the thread's OTEP 4947 context record as read
 * at the sample. The first 28 bytes are the record's header, byte for byte; attrs holds the first
 * attrs_copied bytes of its attrs_data (attrs_size is what the record claims, which may be more).
 */
struct otelprof_trace_ctx {
	__u8 trace_id[16];  /* W3C trace id */
	__u8 span_id[8];    /* W3C span id */
	__u8 valid;         /* 1 (records with another value are not sent) */
	__u8 trace_flags;   /* W3C trace flags */
	__u16 attrs_size;   /* attrs_data_size as the record says (host endianness) */
	__u16 attrs_copied; /* bytes of attrs_data in attrs: min(attrs_size, OTELPROF_TRACE_ATTRS_MAX) */
	__u16 reserved;     /* zero */
	__u8 attrs[OTELPROF_TRACE_ATTRS_MAX]; /* entries (key u8, length u8, value[length]), packed */
	__u32 reserved2;    /* zero; keeps the size a multiple of 8 */
};

/* How a process's thread reaches its otel_thread_ctx_v1 variable (x86-64 TLS, variant II). */
enum otelprof_tls_mode {
	OTELPROF_TLS_STATIC = 1, /* at thread pointer + tp_offset: the executable, or a library in the
				    static TLS block */
	OTELPROF_TLS_DTV = 2,    /* at dtv[module].pointer + offset: a library in dynamic TLS (dlopen) */
};

/*
 * One slot of a sample's Python tail: an interpreter frame (code != 0) or an entry marker (code 0):
 * the frames between two markers ran in one call of the interpreter's C function (innermost call
 * first). 3.11 marks the outermost frame of each call (is_entry): the marker follows that frame;
 * 3.12 and later push a shim frame owned by the C stack: the marker stands in its place.
 */
struct otelprof_python_frame {
	__u64 code;  /* the frame's code object (f_code, f_executable); 0: an entry marker */
	__u64 instr; /* its instruction pointer as the frame holds it (prev_instr, instr_ptr) */
};

/*
 * Where a CPython process keeps its threads' frame chains (prepared in user space from the
 * interpreter's version or _Py_DebugOffsets: runtimes/python/python_layout.h). Offsets are in bytes.
 */
struct otelprof_python_proc {
	__u64 interp_head;         /* address of _PyRuntime.interpreters.head; 0: not a Python process */
	__u16 interp_threads_head; /* PyInterpreterState: threads.head */
	__u16 tstate_next;         /* PyThreadState: next */
	__u16 tstate_native_tid;   /* PyThreadState: native_thread_id (the thread's tid) */
	__u16 tstate_frame;        /* PyThreadState: cframe (3.11, 3.12) or current_frame (3.13) */
	__u16 cframe_frame;        /* _PyCFrame: current_frame; OTELPROF_PYTHON_NONE: no _PyCFrame */
	__u8 frame_code;           /* _PyInterpreterFrame: f_code or f_executable (< 64) */
	__u8 frame_previous;       /* _PyInterpreterFrame: previous (< 64) */
	__u8 frame_instr;          /* _PyInterpreterFrame: prev_instr or instr_ptr (< 64) */
	__u8 frame_owner;          /* _PyInterpreterFrame: owner (< 72) */
	__u8 frame_is_entry;       /* _PyInterpreterFrame: is_entry (3.11, < 72), or OTELPROF_PYTHON_NONE */
	__u8 owner_cstack;         /* owner of the C stack's shim frames (3.12+: 3), or OTELPROF_PYTHON_NONE */
	__u8 reserved[8];          /* zero */
};

/*
 * Value of the map trace_procs (key: pid): a process whose threads may publish a thread context
 * (mode != 0), or that runs CPython (python.interp_head != 0), or both: one lookup per sample finds
 * every per-process entry.
 */
struct otelprof_trace_proc {
	__u64 start_ns;   /* the process's start (as in otelprof_sample): a reused pid does not match */
	__s64 tp_offset;  /* OTELPROF_TLS_STATIC: the variable's offset from the thread pointer */
	__u64 module;     /* OTELPROF_TLS_DTV: the module id (index in the DTV) */
	__u64 offset;     /* OTELPROF_TLS_DTV: the variable's offset in the module's TLS block */
	__u32 mode;       /* enum otelprof_tls_mode; 0: no thread context */
	__u32 reserved;   /* zero */
	struct otelprof_python_proc python; /* CPython frame chain; zero: not Python (or not read) */
};

/* How a Go release keeps a goroutine's labels (struct otelprof_go_proc.layout). */
enum otelprof_go_layout {
	OTELPROF_GO_LABELS_MAP = 1,   /* Go 1.19-1.23: g.labels -> *map[string]string (an hmap) */
	OTELPROF_GO_LABELS_SLICE = 2, /* Go 1.24+: g.labels -> []struct{key, value string} */
};

/*
 * Value of the map go_procs (key: pid): a Go process and its release's runtime offsets
 * (runtimes/go/go_process.c, from the binary's .go.buildinfo version). Offsets in bytes.
 */
struct otelprof_go_proc {
	__u64 start_ns; /* the process's start (as in otelprof_sample): a reused pid does not match */
	__u16 g_m;      /* runtime.g: m */
	__u16 m_curg;   /* runtime.m: curg (the user goroutine, also when on g0 or gsignal) */
	__u16 g_labels; /* runtime.g: labels */
	__u8 layout;    /* enum otelprof_go_layout */
	__s32 g_tls;    /* where the thread's g is, from the thread pointer (fs_base): -8 for a
			   Go-linked binary, runtime.tlsg's place in the PT_TLS block for a cgo one */
	__u8 reserved[4]; /* zero */
};

/* One goroutine label as read: lengths of the bytes kept, and the lengths Go has. */
struct otelprof_go_label {
	__u8 key_len;    /* bytes of key kept (<= OTELPROF_GO_LABEL_LEN) */
	__u8 value_len;  /* bytes of value kept */
	__u8 cut;        /* 1: the key or the value was longer and was cut */
	__u8 reserved[5];
	char key[OTELPROF_GO_LABEL_LEN];
	char value[OTELPROF_GO_LABEL_LEN];
};

/* The tail of a sample with OTELPROF_SAMPLE_GO_LABELS. */
struct otelprof_go_labels {
	__u32 count;   /* labels in label[] (1 .. OTELPROF_GO_MAX_LABELS) */
	__u32 dropped; /* labels the goroutine has beyond those (not read) */
	struct otelprof_go_label label[OTELPROF_GO_MAX_LABELS];
};

/*
 * A process life event. Every kind carries the process's identity (pid, start time) and its cgroup;
 * fork also names the parent, exec the file that was executed.
 */
struct otelprof_proc_event {
	struct otelprof_record_header hdr;
	__u64 time_ns;                  /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 start_ns;                 /* process start, CLOCK_BOOTTIME ns (as in otelprof_sample) */
	__u64 parent_start_ns;          /* fork: the parent process's start; otherwise 0 */
	__u64 cgroup_id;                /* cgroup v2 id of the task */
	__u32 pid;                      /* process id in the daemon's pid namespace (pidns.bpf.h) */
	__u32 parent_pid;               /* fork: the parent process; otherwise 0 */
	__u32 exec_id;                  /* the process's exec count after the event (as in
					   otelprof_sample): fork, the parent's; exec, the new one */
	__u32 reserved;                 /* zero */
	char comm[OTELPROF_COMM_LEN];   /* process name after the event */
	char filename[OTELPROF_PATH_LEN]; /* exec: the path given to execve (maybe relative); else "" */
};

#define OTELPROF_ASSERT_SIZE(type, bytes) \
	_Static_assert(sizeof(type) == (bytes), #type " changed size: update both sides")
OTELPROF_ASSERT_SIZE(struct otelprof_record_header, 8);
OTELPROF_ASSERT_SIZE(struct otelprof_sample, 8 + 8 + 8 + 8 + 16 + 32 + 8 + 8 + 2 * 8 * OTELPROF_MAX_STACK_DEPTH);
OTELPROF_ASSERT_SIZE(struct otelprof_stack_window, 32);
OTELPROF_ASSERT_SIZE(struct otelprof_stack_top, 24);
_Static_assert(__builtin_offsetof(struct otelprof_sample, kernel_ips) == OTELPROF_SAMPLE_HEAD_SIZE,
	       "a packed sample's head ends where kernel_ips starts");
OTELPROF_ASSERT_SIZE(struct otelprof_proc_event, 8 + 32 + 8 + 8 + OTELPROF_COMM_LEN + OTELPROF_PATH_LEN);
OTELPROF_ASSERT_SIZE(struct otelprof_trace_ctx, 28 + 4 + OTELPROF_TRACE_ATTRS_MAX + 4);
OTELPROF_ASSERT_SIZE(struct otelprof_python_frame, 16);
OTELPROF_ASSERT_SIZE(struct otelprof_python_proc, 32);
OTELPROF_ASSERT_SIZE(struct otelprof_trace_proc, 40 + 32);
OTELPROF_ASSERT_SIZE(struct otelprof_go_proc, 24);
OTELPROF_ASSERT_SIZE(struct otelprof_go_label, 8 + 2 * OTELPROF_GO_LABEL_LEN);
OTELPROF_ASSERT_SIZE(struct otelprof_go_labels, 8 + OTELPROF_GO_MAX_LABELS * (8 + 2 * OTELPROF_GO_LABEL_LEN));

/*
 * Off-CPU (--off-cpu). A sampled task leaving a CPU sends an OTELPROF_RECORD_OFF_CPU: a struct
 * otelprof_sample (with its stack window tail) taken at the switch, time_ns the switch-out time.
 * When that task runs again, OTELPROF_RECORD_OFF_CPU_END says how long it was away. User space
 * joins the two by tid and start_ns: the ring buffer keeps a task's records in order (it cannot run
 * again before its switch-out record is reserved).
 */
#define OTELPROF_RECORD_OFF_CPU 5     /* struct otelprof_sample, taken as the task left the CPU */
#define OTELPROF_RECORD_OFF_CPU_END 6 /* struct otelprof_off_cpu_end: the task runs again */

/* Default bound of the in-flight map (sampled tasks off CPU); --off-cpu-max-inflight changes it. */
#define OTELPROF_OFF_CPU_INFLIGHT 16384

/* Indices of the per-CPU counter array "off_cpu_counters" (apart from "counters": kept additive). */
enum otelprof_off_cpu_counter {
	OTELPROF_OFFCPU_CNT_SWITCHES = 0,  /* switch-outs seen (every task, every CPU) */
	OTELPROF_OFFCPU_CNT_SAMPLED,       /* of those, chosen by --off-cpu-probability */
	OTELPROF_OFFCPU_CNT_FILTERED,      /* sampled but not a target (pid, cgroup, kernel thread) */
	OTELPROF_OFFCPU_CNT_INFLIGHT_FULL, /* sampled targets dropped: the in-flight map was full */
	OTELPROF_OFFCPU_CNT_STARTS,        /* switch-out records sent */
	OTELPROF_OFFCPU_CNT_ENDS,          /* end records sent */
	OTELPROF_OFFCPU_CNT_RINGBUF_FULL,  /* switch-out or end records lost: ring buffer full */
	OTELPROF_OFFCPU_CNT_ENDS_AT_EXIT,  /* of the ends, sent at the thread's exit: its switch-in was not seen */
	OTELPROF_OFFCPU_CNT_SHED,          /* sampled targets left out over the CPU ceiling (cpu_shed.bpf.h;
					      counted in its counters too) */
	OTELPROF_OFFCPU_CNT_MAX,
};

/* The value of the in-flight map, keyed by tid. */
struct otelprof_off_cpu_start {
	__u64 start_ns; /* bpf_ktime_get_ns() at the switch-out */
	__u32 pid;      /* thread group id of the task */
	__u32 reserved; /* zero */
};

/* A task whose switch-out was sampled runs again. */
struct otelprof_off_cpu_end {
	struct otelprof_record_header hdr;
	__u64 start_ns; /* switch-out time: equals time_ns of the task's OTELPROF_RECORD_OFF_CPU */
	__u64 end_ns;   /* switch-in time, bpf_ktime_get_ns() */
	__u32 pid;      /* thread group id in the daemon's pid namespace (pidns.bpf.h) */
	__u32 tid;      /* thread id in the daemon's pid namespace (pidns.bpf.h) */
	__u32 cpu;      /* CPU the task runs on again */
	__u32 reserved; /* zero */
};

OTELPROF_ASSERT_SIZE(struct otelprof_off_cpu_start, 16);
OTELPROF_ASSERT_SIZE(struct otelprof_off_cpu_end, 8 + 16 + 16);

/*
 * Allocations (--alloc, bpf/alloc.bpf.h): a process's sampler library fires the USDT probes
 * otel_memory:alloc(ptr, size, weight) for a sampled allocation and otel_memory:free(ptr) when a
 * sampled pointer is freed. An alloc sends an OTELPROF_RECORD_ALLOC: a struct otelprof_sample taken
 * at the probe (its stack window tail, if any), then a struct otelprof_alloc ending the record (at
 * hdr.size - sizeof(struct otelprof_alloc)). A free sends a struct otelprof_free. User space keeps
 * the live sampled allocations (the in-use profiles) and counts what it could not keep.
 */
#define OTELPROF_RECORD_ALLOC 7 /* struct otelprof_sample, its tail, then struct otelprof_alloc */
#define OTELPROF_RECORD_FREE 8  /* struct otelprof_free */

/* Indices of the per-CPU counter array "alloc_counters". */
enum otelprof_alloc_counter {
	OTELPROF_ALLOC_CNT_ALLOCS = 0,    /* alloc probes that ran */
	OTELPROF_ALLOC_CNT_FREES,         /* free probes that ran */
	OTELPROF_ALLOC_CNT_FILTERED,      /* alloc probes of processes outside the pid or cgroup filter
					     (or the daemon's PID namespace) */
	OTELPROF_ALLOC_CNT_SENT,          /* alloc records sent */
	OTELPROF_ALLOC_CNT_FREES_SENT,    /* free records sent */
	OTELPROF_ALLOC_CNT_RINGBUF_FULL,  /* alloc records lost: ring buffer full */
	OTELPROF_ALLOC_CNT_SCRATCH_BUSY,  /* allocs dropped: the CPU's scratch was in use (the probe
					     was preempted by another on this CPU) */
	OTELPROF_ALLOC_CNT_FREES_FILTERED, /* free probes of processes outside the filters */
	OTELPROF_ALLOC_CNT_FREES_RINGBUF_FULL, /* free records lost: ring buffer full */
	OTELPROF_ALLOC_CNT_MAX,
};

/* The end of an OTELPROF_RECORD_ALLOC. */
struct otelprof_alloc {
	__u64 ptr;    /* the allocation's address */
	__u64 size;   /* bytes asked for */
	__u64 weight; /* the library's unbiased estimate of the bytes this sample stands for (>= size) */
};

/* A sampled pointer was freed. */
struct otelprof_free {
	struct otelprof_record_header hdr;
	__u64 time_ns;  /* bpf_ktime_get_ns() */
	__u64 start_ns; /* process start (as in otelprof_sample) */
	__u64 ptr;      /* the address freed */
	__u32 pid;      /* thread group id in the root pid namespace */
	__u32 tid;      /* thread id in the root pid namespace */
};

OTELPROF_ASSERT_SIZE(struct otelprof_alloc, 24);
OTELPROF_ASSERT_SIZE(struct otelprof_free, 8 + 24 + 8);

#endif
