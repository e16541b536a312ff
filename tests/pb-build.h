/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Builds the protobuf messages of an OTEP 4719 ProcessContext for the tests of the process context
 * and of the trace table. Include after cmocka.h (overflow fails the test); put_sub() consumes the
 * message it appends.
 */
#ifndef OTELPROFD_TESTS_PB_BUILD_H
#define OTELPROFD_TESTS_PB_BUILD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "process/process_ctx.h"

/* A protobuf message being built: room for a payload past PROCESS_CTX_MAX_PAYLOAD. */
struct msg {
	uint8_t b[PROCESS_CTX_MAX_PAYLOAD * 2];
	size_t n;
};

static inline struct msg *msg_new(void)
{
	struct msg *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	return m;
}

static inline void put_raw(struct msg *m, const void *p, size_t len)
{
	assert_true(m->n + len <= sizeof(m->b));
	memcpy(m->b + m->n, p, len);
	m->n += len;
}

static inline void put_varint(struct msg *m, uint64_t v)
{
	do {
		uint8_t byte = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);

		put_raw(m, &byte, 1);
		v >>= 7;
	} while (v);
}

static inline void put_tag(struct msg *m, uint32_t field, unsigned type)
{
	put_varint(m, (uint64_t)field << 3 | type);
}

static inline void put_bytes(struct msg *m, uint32_t field, const void *p, size_t len)
{
	put_tag(m, field, 2);
	put_varint(m, len);
	put_raw(m, p, len);
}

static inline void put_string(struct msg *m, uint32_t field, const char *s)
{
	put_bytes(m, field, s, strlen(s));
}

/* Append tail's bytes (no tag), and free it. */
static inline void put_msg(struct msg *m, struct msg *tail)
{
	put_raw(m, tail->b, tail->n);
	free(tail);
}

/* Append sub as field, and free it. */
static inline void put_sub(struct msg *m, uint32_t field, struct msg *sub)
{
	put_bytes(m, field, sub->b, sub->n);
	free(sub);
}

static inline struct msg *any_string(const char *s)
{
	struct msg *v = msg_new();

	put_string(v, 1, s);
	return v;
}

/* A KeyValue of key and value (consumed). */
static inline struct msg *key_value(const char *key, struct msg *value)
{
	struct msg *kv = msg_new();

	put_string(kv, 1, key);
	put_sub(kv, 2, value);
	return kv;
}

/* ProcessContext { resource { attributes: resource_attrs } } plus its extra attributes. */
static inline struct msg *process_context(struct msg *resource_attrs, struct msg *extra)
{
	struct msg *pc = msg_new();

	if (resource_attrs) {
		struct msg *resource = msg_new();

		put_msg(resource, resource_attrs);
		put_sub(pc, 1, resource);
	}
	if (extra) {
		put_msg(pc, extra);
	}
	return pc;
}

/* An attribute_key_map of names (NULL: an int, not a string). */
static inline struct msg *key_map_of(const char *const *names, size_t n)
{
	struct msg *array = msg_new(), *any = msg_new();

	for (size_t i = 0; i < n; i++) {
		struct msg *v = msg_new();

		if (names[i]) {
			put_string(v, 1, names[i]);
		} else {
			put_tag(v, 3, 0);
			put_varint(v, 7);
		}
		put_sub(array, 1, v);
	}
	put_sub(any, 5, array);
	return key_value("threadlocal.attribute_key_map", any);
}

#endif
