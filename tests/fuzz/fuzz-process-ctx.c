// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target over what a traced process publishes: its ProcessContext payload (decoded
 * alone, then read through the OTEP 4719 protocol from a header the input gives), and its thread
 * context records' attrs_data parsed against the context's key map by the trace table.
 *
 * Input: payload length (u16 little endian), the payload, then a 32-byte mapping header and the
 * attrs_data of a record (both optional). See gen-ctx-seeds.py for the seeds.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "process/process_ctx.h"
#include "process/trace_table.h"
#include "profile/aggregate.h"

#define HEADER_AT 0x1000ULL
#define PAYLOAD_AT 0x100000ULL

struct input {
	const uint8_t *payload;
	size_t payload_len;
	struct process_ctx_header h;
	unsigned reads;
};

/* The fake process's memory: the header, and the payload at PAYLOAD_AT. */
static int memory(void *ctx, uint64_t address, void *buf, size_t len)
{
	struct input *in = ctx;

	if (address == HEADER_AT && len == sizeof(in->h)) {
		memcpy(buf, &in->h, len);
		/* Every other read sees the header being rewritten when the input asks (low bit of
		 * published_at_ns): the protocol's retries. */
		if ((in->h.published_at_ns & 1) && (in->reads++ & 1))
			((struct process_ctx_header *)buf)->published_at_ns++;
		return 0;
	}
	if (address >= PAYLOAD_AT && address - PAYLOAD_AT <= in->payload_len &&
	    len <= in->payload_len - (address - PAYLOAD_AT)) {
		memcpy(buf, in->payload + (address - PAYLOAD_AT), len);
		return 0;
	}
	return -EFAULT;
}

/* The trace table's source: every process publishes the input's payload. */
static int read_context(void *ctx, const char *proc_root, uint32_t pid, struct process_ctx **out)
{
	struct input *in = ctx;

	(void)proc_root, (void)pid;
	return process_ctx_decode(in->payload, in->payload_len, out);
}

static int resolve_thread(void *ctx, const char *proc_root, uint32_t pid, struct otelprof_trace_proc *out)
{
	(void)ctx, (void)proc_root, (void)pid, (void)out;
	return -ENOENT;
}

static void link_records(struct input *in, const uint8_t *attrs, size_t len)
{
	struct trace_table *t = trace_table_new(&(struct trace_table_config){
		.max_processes = 4, .read_context = read_context, .resolve_thread = resolve_thread, .source_ctx = in });
	struct otelprof_trace_ctx *tc = calloc(1, sizeof(*tc));
	static uint8_t link[AGG_LINK_MAX];

	if (!t || !tc)
		goto out;
	trace_table_check(t, 1, 1, 1, 0, true, 0);
	memset(tc->trace_id, 0x11, sizeof(tc->trace_id));
	memset(tc->span_id, 0x22, sizeof(tc->span_id));
	tc->valid = 1;
	tc->attrs_copied = (uint16_t)(len < OTELPROF_TRACE_ATTRS_MAX ? len : OTELPROF_TRACE_ATTRS_MAX);
	tc->attrs_size = (uint16_t)len;
	memcpy(tc->attrs, attrs, tc->attrs_copied);
	/* Once, and again a second later: unknown keys read the context again. */
	if (trace_table_link(t, 1, 1, tc, link, 0) > AGG_LINK_MAX ||
	    trace_table_link(t, 1, 1, tc, link, 2000000000ULL) > AGG_LINK_MAX)
		abort();
	trace_table_retire(t, 1);
	trace_table_forget(t, 1, 1);
out:
	free(tc);
	trace_table_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { 0 };
	struct process_ctx *ctx;
	size_t len;

	if (size < 2)
		return 0;
	len = (size_t)data[0] | (size_t)data[1] << 8;
	data += 2, size -= 2;
	if (len > size)
		len = size;
	/* An exact copy: any read past the payload is ASan's. */
	in.payload = len ? memcpy(malloc(len), data, len) : (const uint8_t *)"";
	in.payload_len = len;
	data += len, size -= len;

	if (!process_ctx_decode(in.payload, in.payload_len, &ctx)) {
		for (size_t i = 0; i < ctx->nkeys; i++)
			if (ctx->keys[i] && !utf8_valid(ctx->keys[i], strlen(ctx->keys[i])))
				abort();
		process_ctx_free(ctx);
	}
	if (size >= sizeof(in.h)) {
		memcpy(&in.h, data, sizeof(in.h));
		/* Near the payload, so that the input can point inside, at its end or just past it. */
		in.h.payload = PAYLOAD_AT + (in.h.payload & 0xff) - 0x80;
		if (!process_ctx_fetch(memory, &in, HEADER_AT, &ctx))
			process_ctx_free(ctx);
		data += sizeof(in.h), size -= sizeof(in.h);
	}
	link_records(&in, data, size);
	if (len)
		free((void *)in.payload);
	return 0;
}
