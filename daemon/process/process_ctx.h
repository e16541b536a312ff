/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OTEP 4719 process context of a process: the resource attributes its OpenTelemetry SDK
 * publishes in a mapping named OTEL_CTX, and the OTEP 4947 thread-local reference data (schema
 * version, attribute key map) among its attributes.
 *
 * Read from /proc/PID/maps and the process's memory with process_vm_readv, bounded and checked
 * (hostile bytes are a failed read, never a crash): payload at most PROCESS_CTX_MAX_PAYLOAD bytes,
 * at most PROCESS_CTX_MAX_ATTRS resource attributes and PROCESS_CTX_MAX_KEYS keys, strings valid
 * UTF-8 of bounded length (others are skipped and counted in the result). The caller owns the
 * result: process_ctx_free().
 */
#ifndef OTELPROFD_PROCESS_CTX_H
#define OTELPROFD_PROCESS_CTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "utf8.h"

#define PROCESS_CTX_MAX_PAYLOAD (64u << 10)
#define PROCESS_CTX_MAX_ATTRS 128
#define PROCESS_CTX_MAX_KEYS 256  /* a thread context key is a uint8 */
#define PROCESS_CTX_MAX_STRING 1024

struct process_ctx_attr {
	char *key;
	char *value; /* string, int, bool and double values as text */
};

struct process_ctx {
	uint64_t address;         /* the header's address in the process */
	uint64_t published_at_ns; /* the header's timestamp: changes at every update */
	struct process_ctx_attr *attrs; /* the Resource's attributes */
	size_t nattrs;
	char **keys;              /* threadlocal.attribute_key_map: key id -> name (NULL: not a string) */
	size_t nkeys;
	bool thread_ctx;          /* threadlocal.schema_version is one this reader knows
				     (tlsdesc_v1_dev, tls_v1): the threads may publish OTEP 4947 records */
	unsigned skipped;         /* attributes or keys left out: too many, too long, not UTF-8 */
};

/* The mapping's header, as OTEP 4719 lays it out. */
struct process_ctx_header {
	char signature[8];         /* "OTEL_CTX", written last */
	uint32_t version;          /* 2 (1: development) */
	uint32_t payload_size;
	uint64_t published_at_ns;  /* 0 while being written */
	uint64_t payload;          /* address of the payload in the process */
};
_Static_assert(sizeof(struct process_ctx_header) == 32, "OTEP 4719 header is 32 bytes");

/*
 * Read pid's context. 0 and *out, or: -ENOENT (no OTEL_CTX mapping), -EBADMSG (bad signature,
 * version, sizes or protobuf, or a payload where the process has no memory), -EFBIG (payload over
 * the bound), -EAGAIN (being written, or changed under every read), -ENOMEM, or the -errno of
 * reading /proc or the memory.
 */
int process_ctx_read(const char *proc_root, uint32_t pid, struct process_ctx **out);

/* Copy len bytes at address of the process into buf: 0 or -errno (-EFAULT: not all of it mapped). */
typedef int (*process_ctx_read_fn)(void *read_ctx, uint64_t address, void *buf, size_t len);

/* The read protocol from the header at address on, through read (the process's memory, or a test's
 * bytes): as process_ctx_read() once the mapping is found. */
int process_ctx_fetch(process_ctx_read_fn read, void *read_ctx, uint64_t address, struct process_ctx **out);

/* Decode a ProcessContext payload (address and published_at_ns left 0): 0, -EBADMSG or -ENOMEM. */
int process_ctx_decode(const uint8_t *payload, size_t len, struct process_ctx **out);
void process_ctx_free(struct process_ctx *ctx);


#endif
