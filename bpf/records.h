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

enum otelprof_record_kind {
	OTELPROF_RECORD_SAMPLE = 1, /* struct otelprof_sample */
};

/* Bits of otelprof_sample.flags. */
enum otelprof_sample_flag {
	OTELPROF_SAMPLE_KERNEL_MODE = 1 << 0,     /* the sample interrupted kernel code */
	OTELPROF_SAMPLE_KSTACK_ERROR = 1 << 1,    /* bpf_get_stack failed for the kernel stack */
	OTELPROF_SAMPLE_USTACK_ERROR = 1 << 2,    /* bpf_get_stack failed for the user stack */
	OTELPROF_SAMPLE_KERNEL_THREAD = 1 << 3,   /* the task has no user address space */
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
	__u32 pid;                            /* thread group id (process id) in the root pid namespace */
	__u32 tid;                            /* thread id in the root pid namespace */
	__u32 cpu;                            /* logical CPU the sample was taken on */
	__u32 flags;                          /* enum otelprof_sample_flag bits */
	char comm[OTELPROF_COMM_LEN];         /* thread name */
	char process_comm[OTELPROF_COMM_LEN]; /* name of the thread group leader */
	__u16 kernel_depth;                   /* valid entries in kernel_ips, leaf first */
	__u16 user_depth;                     /* valid entries in user_ips, leaf first */
	__u32 reserved;                       /* zero; keeps the arrays 8-byte aligned */
	__u64 kernel_ips[OTELPROF_MAX_STACK_DEPTH]; /* kernel instruction pointers, leaf first */
	__u64 user_ips[OTELPROF_MAX_STACK_DEPTH];   /* user instruction pointers (frame-pointer walk) */
};

#define OTELPROF_ASSERT_SIZE(type, bytes) \
	_Static_assert(sizeof(type) == (bytes), #type " changed size: update both sides")
OTELPROF_ASSERT_SIZE(struct otelprof_record_header, 8);
OTELPROF_ASSERT_SIZE(struct otelprof_sample, 8 + 8 + 8 + 16 + 32 + 8 + 2 * 8 * OTELPROF_MAX_STACK_DEPTH);

#endif
