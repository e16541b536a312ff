// SPDX-License-Identifier: Apache-2.0
#include "sampling/record_unpack.h"

#include <string.h>

void record_unpack(struct record_unpack *u, const void **data, size_t *size)
{
	const uint8_t *in = *data;
	struct otelprof_sample head, *out = (struct otelprof_sample *)u->buf;
	size_t kbytes, ubytes, tail;

	if (*size < OTELPROF_SAMPLE_HEAD_SIZE)
		return;
	memcpy(&head, in, OTELPROF_SAMPLE_HEAD_SIZE);
	if ((head.hdr.kind != OTELPROF_RECORD_SAMPLE && head.hdr.kind != OTELPROF_RECORD_ALLOC) ||
	    !(head.flags & OTELPROF_SAMPLE_PACKED))
		return;
	kbytes = (size_t)head.kernel_depth * sizeof(uint64_t);
	ubytes = (size_t)head.user_depth * sizeof(uint64_t);
	if (head.kernel_depth > OTELPROF_MAX_STACK_DEPTH || head.user_depth > OTELPROF_MAX_STACK_DEPTH ||
	    head.hdr.size > *size || head.hdr.size < OTELPROF_SAMPLE_HEAD_SIZE + kbytes + ubytes ||
	    head.hdr.size - OTELPROF_SAMPLE_HEAD_SIZE - kbytes - ubytes > RECORD_UNPACK_TAIL_MAX) {
		u->malformed++;
		*size = 0;
		return;
	}
	tail = head.hdr.size - OTELPROF_SAMPLE_HEAD_SIZE - kbytes - ubytes;
	u->unpacked++;
	u->packed_bytes += head.hdr.size;
	memcpy(out, &head, OTELPROF_SAMPLE_HEAD_SIZE);
	memcpy(out->kernel_ips, in + OTELPROF_SAMPLE_HEAD_SIZE, kbytes);
	memcpy(out->user_ips, in + OTELPROF_SAMPLE_HEAD_SIZE + kbytes, ubytes);
	memcpy(out + 1, in + OTELPROF_SAMPLE_HEAD_SIZE + kbytes + ubytes, tail);
	out->flags &= ~(uint32_t)OTELPROF_SAMPLE_PACKED;
	out->hdr.size = (uint32_t)(sizeof(*out) + tail);
	*data = out;
	*size = sizeof(*out) + tail;
}
