/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packed on-CPU samples and allocation records (OTELPROF_SAMPLE_PACKED, bpf/packed_sample.bpf.h)
 * turned back into whole ones: the ring buffer carries only a sample's used instruction pointers, and every reader after
 * the sampler sees a struct otelprof_sample with its tail, as before. Other records pass as they are.
 * One buffer, owned by the caller's struct record_unpack, holds the sample being handled: a record
 * handed out is valid until the next call.
 */
#ifndef OTELPROFD_RECORD_UNPACK_H
#define OTELPROFD_RECORD_UNPACK_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"

/* The largest tail a sample may carry: the stack window, a Python or Go labels tail, a thread context. */
#define RECORD_UNPACK_TAIL_MAX                                                                          \
	(sizeof(struct otelprof_stack_window) + OTELPROF_MAX_STACK_COPY +                                 \
	 OTELPROF_PYTHON_MAX_SLOTS * sizeof(struct otelprof_python_frame) + sizeof(struct otelprof_trace_ctx))

struct record_unpack {
	uint64_t unpacked;  /* packed samples unpacked */
	uint64_t malformed; /* packed samples whose depths or sizes disagree: handed on empty (size 0) */
	uint64_t packed_bytes; /* bytes of the packed samples, as the ring buffer carried them */
	_Alignas(8) uint8_t buf[sizeof(struct otelprof_sample) + RECORD_UNPACK_TAIL_MAX];
};

/*
 * *data, *size: a record as read from the ring buffer. A packed sample is unpacked into u->buf and
 * *data, *size are changed to it (a malformed one: *size 0, which every reader refuses and counts).
 */
void record_unpack(struct record_unpack *u, const void **data, size_t *size);

#endif
