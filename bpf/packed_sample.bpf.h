/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Packed on-CPU samples (included by profile.bpf.c, after send_sample's helpers). A struct
 * otelprof_sample has room for 127 kernel and 127 user instruction pointers: 2,032 bytes, most of
 * them unused (a sample in user code has no kernel frames, and a stack window that holds the whole
 * stack needs no frame-pointer walk). Sampled allocations' records (alloc.bpf.h) are packed too. At 10,000 Hz per CPU those bytes filled the ring buffer and
 * dropped samples. A packed record carries the sample's head, the used ips and the tail only
 * (OTELPROF_SAMPLE_PACKED in records.h); user space unpacks it (daemon/sampling/record_unpack.c).
 *
 * The record's size is known only at run time: it is reserved as a dynptr (Linux 5.19+). User space
 * turns packed_samples on only where the kernel has bpf_ringbuf_reserve_dynptr(); the verifier
 * never sees the dynptr calls otherwise (a false constant prunes them).
 */
#ifndef OTELPROF_PACKED_SAMPLE_BPF_H
#define OTELPROF_PACKED_SAMPLE_BPF_H

const volatile bool packed_samples = false; /* send samples packed (set by user space before load) */

/* Bytes of ips a depth stands for, bounded for the verifier. */
static __always_inline __u32 ips_bytes(__u16 depth)
{
	__u32 n = depth;

	/* The product is taken after the test, from the register it bounded. */
	if (n > OTELPROF_MAX_STACK_DEPTH)
		return 0;
	barrier_var(n);
	return n * sizeof(__u64);
}

/*
 * Send the sample in b (head, stacks, tail bytes of tail after b->w) packed into the ring buffer.
 * 0, or -1 when the buffer had no room (counted by the caller as for an unpacked sample).
 */
static __always_inline long send_packed_sample(struct sample_buf *b, __u64 tail, __u64 flags)
{
	struct otelprof_sample *s = &b->s;
	__u32 kbytes = ips_bytes(s->kernel_depth), ubytes = ips_bytes(s->user_depth);
	struct bpf_dynptr rec;
	__u32 size;

	if (tail > sizeof(b->w) + OTELPROF_MAX_STACK_COPY + PYTHON_TAIL_MAX + sizeof(struct otelprof_trace_ctx))
		tail = 0;
	/* The depths sent are the bytes sent: a depth out of bounds is sent as 0. */
	s->kernel_depth = kbytes / sizeof(__u64);
	s->user_depth = ubytes / sizeof(__u64);
	size = OTELPROF_SAMPLE_HEAD_SIZE + kbytes + ubytes + (__u32)tail;
	s->flags |= OTELPROF_SAMPLE_PACKED;
	s->hdr.size = size;
	if (bpf_ringbuf_reserve_dynptr(&events, size, 0, &rec)) {
		bpf_ringbuf_discard_dynptr(&rec, 0);
		return -1;
	}
	bpf_dynptr_write(&rec, 0, s, OTELPROF_SAMPLE_HEAD_SIZE, 0);
	bpf_dynptr_write(&rec, OTELPROF_SAMPLE_HEAD_SIZE, s->kernel_ips, kbytes, 0);
	bpf_dynptr_write(&rec, OTELPROF_SAMPLE_HEAD_SIZE + kbytes, s->user_ips, ubytes, 0);
	bpf_dynptr_write(&rec, OTELPROF_SAMPLE_HEAD_SIZE + kbytes + ubytes, &b->w, (__u32)tail, 0);
	bpf_ringbuf_submit_dynptr(&rec, flags);
	return 0;
}

#endif
