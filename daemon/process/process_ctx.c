// SPDX-License-Identifier: Apache-2.0
#include "process/process_ctx.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "proc_maps_share.h"

/* Names a mapping may have (OTEP 4719 and its kernel-dependent forms). */
static const char *const mapping_names[] = { "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]", "/memfd:OTEL_CTX" };
/* Tries of the read protocol before giving up on a context being rewritten. */
#define READ_TRIES 3
/* Lines of /proc/PID/maps read at most while looking for the mapping. */
#define MAX_MAPS_LINES 65536

static int read_memory(void *pidp, uint64_t address, void *buf, size_t len)
{
	uint32_t pid = *(const uint32_t *)pidp;
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)address, .iov_len = len };
	ssize_t n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

static int find_mapping(const char *proc_root, uint32_t pid, uint64_t *address)
{
	char line[512];
	unsigned lines = 0;
	bool whole = true;
	FILE *f;
	int r = -ENOENT;

	f = proc_maps_fopen(proc_root, pid); /* the symbolizer's read of this record, when it made one */
	if (!f)
		return -errno;
	while (r == -ENOENT && lines < MAX_MAPS_LINES && fgets(line, sizeof(line), f)) {
		unsigned long long start;
		bool starts_line = whole;
		int name = 0;

		/* The rest of a line longer than the buffer is the process's file name, not a mapping. */
		whole = strchr(line, '\n') != NULL;
		if (!starts_line)
			continue;
		lines++;
		/* Named mappings only, before the costly sscanf(): every name sought has OTEL_CTX. */
		if (!strstr(line, "OTEL_CTX"))
			continue;
		if (sscanf(line, "%llx-%*x %*s %*x %*x:%*x %*u %n", &start, &name) < 1 || !name)
			continue;
		for (size_t i = 0; i < sizeof(mapping_names) / sizeof(mapping_names[0]); i++)
			if (!strncmp(line + name, mapping_names[i], strlen(mapping_names[i]))) {
				*address = start;
				r = 0;
			}
	}
	fclose(f);
	return r;
}

/*
 * A small protobuf reader for the payload's few messages: bounded by the buffer, nesting bounded by
 * the schema (no recursion on what the bytes say), unknown fields skipped.
 */
struct pb {
	const uint8_t *p, *end;
};

static bool pb_varint(struct pb *b, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 64 && b->p < b->end; shift += 7) {
		uint8_t byte = *b->p++;

		/* The tenth byte holds bit 63 alone: more would wrap (a length of 2^64 + 3 read as 3). */
		if (shift == 63 && byte > 1)
			return false;
		*v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return true;
	}
	return false;
}

/* The next field: its number, wire type, and for a length-delimited one its bytes (in *sub). */
static bool pb_field(struct pb *b, uint32_t *number, unsigned *type, struct pb *sub, uint64_t *value)
{
	uint64_t tag, len;

	if (!pb_varint(b, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
		return false;
	*number = (uint32_t)(tag >> 3);
	*type = tag & 7;
	switch (*type) {
	case 0:
		return pb_varint(b, value);
	case 1:
		if (b->end - b->p < 8)
			return false;
		memcpy(value, b->p, 8);
		b->p += 8;
		return true;
	case 2:
		if (!pb_varint(b, &len) || len > (uint64_t)(b->end - b->p))
			return false;
		sub->p = b->p;
		sub->end = b->p + len;
		b->p += len;
		return true;
	case 5:
		if (b->end - b->p < 4)
			return false;
		*value = 0;
		memcpy(value, b->p, 4);
		b->p += 4;
		return true;
	default:
		return false;
	}
}

static char *pb_string(const struct pb *s)
{
	size_t len = (size_t)(s->end - s->p);
	char *out;

	if (len > PROCESS_CTX_MAX_STRING || !utf8_valid((const char *)s->p, len) || memchr(s->p, 0, len))
		return NULL;
	out = malloc(len + 1);
	if (out) {
		memcpy(out, s->p, len);
		out[len] = 0;
	}
	return out;
}

/*
 * An AnyValue: in *kind the field number of its value (0: none; the last of the oneof wins, unknown
 * fields are skipped), its scalar as text in *text (NULL: not a scalar, or unfit), an array_value's
 * bytes in *array. On false (malformed), *text is NULL.
 */
static bool any_value(struct pb v, uint32_t *kind, char **text, struct pb *array)
{
	struct pb sub;
	uint32_t number;
	unsigned type;
	uint64_t x;
	char buf[64];

	*kind = 0;
	*text = NULL;
	array->p = array->end = NULL;
	while (v.p < v.end) {
		if (!pb_field(&v, &number, &type, &sub, &x)) {
			free(*text);
			*text = NULL;
			return false;
		}
		/* string, bool, int, double, array, kvlist, bytes: the oneof, each with its wire type */
		if (number < 1 || number > 7 || type != (number == 2 || number == 3 ? 0u : number == 4 ? 1u : 2u))
			continue;
		free(*text);
		*text = NULL;
		array->p = array->end = NULL;
		*kind = number;
		if (number == 1) {
			*text = pb_string(&sub);
		} else if (number == 2) {
			*text = strdup(x ? "true" : "false");
		} else if (number == 3) {
			snprintf(buf, sizeof(buf), "%" PRId64, (int64_t)x);
			*text = strdup(buf);
		} else if (number == 4) {
			double d;

			memcpy(&d, &x, sizeof(d));
			snprintf(buf, sizeof(buf), "%.17g", d);
			*text = strdup(buf);
		} else if (number == 5) {
			*array = sub;
		}
	}
	return true;
}

/* A KeyValue: its key and value (text, or an array's bytes). */
static bool key_value(struct pb kv, char **key, char **text, struct pb *array)
{
	struct pb sub, value = { 0 };
	uint32_t number, kind;
	unsigned type;
	uint64_t x;

	*key = *text = NULL;
	array->p = array->end = NULL; /* also when the KeyValue has no value (found by fuzz-process-ctx) */
	while (kv.p < kv.end) {
		if (!pb_field(&kv, &number, &type, &sub, &x))
			goto fail;
		if (number == 1 && type == 2) {
			free(*key);
			*key = pb_string(&sub);
		} else if (number == 2 && type == 2) {
			value = sub;
		}
	}
	if (value.p && !any_value(value, &kind, text, array))
		goto fail;
	return true;
fail:
	free(*key);
	*key = NULL;
	return false;
}

static int add_attr(struct process_ctx *ctx, char *key, char *value)
{
	struct process_ctx_attr *grown;

	if (!key || !value || !*key || ctx->nattrs >= PROCESS_CTX_MAX_ATTRS) {
		ctx->skipped++;
		free(key);
		free(value);
		return 0;
	}
	/* Keys must be unique; a repeated one keeps its first value. */
	for (size_t i = 0; i < ctx->nattrs; i++)
		if (!strcmp(ctx->attrs[i].key, key)) {
			ctx->skipped++;
			free(key);
			free(value);
			return 0;
		}
	grown = realloc(ctx->attrs, (ctx->nattrs + 1) * sizeof(*grown));
	if (!grown) {
		free(key);
		free(value);
		return -ENOMEM;
	}
	ctx->attrs = grown;
	ctx->attrs[ctx->nattrs++] = (struct process_ctx_attr){ .key = key, .value = value };
	return 0;
}

/* threadlocal.attribute_key_map: an ArrayValue of strings, index = key id. */
static int key_map(struct process_ctx *ctx, struct pb array)
{
	struct pb sub, none;
	uint32_t number, kind;
	unsigned type;
	uint64_t x;

	while (array.p < array.end) {
		char *name;

		if (!pb_field(&array, &number, &type, &sub, &x))
			return -EBADMSG;
		if (number != 1 || type != 2)
			continue;
		if (ctx->nkeys >= PROCESS_CTX_MAX_KEYS) {
			ctx->skipped++;
			continue;
		}
		if (!any_value(sub, &kind, &name, &none))
			return -EBADMSG;
		/* A key that is not a string keeps its index, named by nothing. */
		if (kind != 1) {
			free(name);
			name = NULL;
		}
		if (!name)
			ctx->skipped++;
		ctx->keys[ctx->nkeys++] = name;
	}
	return 0;
}

static int decode(struct process_ctx *ctx, const uint8_t *payload, size_t len)
{
	struct pb b = { payload, payload + len }, sub, attrs, array;
	bool seen_schema = false, seen_key_map = false;
	uint32_t number;
	unsigned type;
	uint64_t x;
	int r;

	ctx->keys = calloc(PROCESS_CTX_MAX_KEYS, sizeof(*ctx->keys));
	if (!ctx->keys)
		return -ENOMEM;
	while (b.p < b.end) {
		char *key, *text;

		if (!pb_field(&b, &number, &type, &sub, &x))
			return -EBADMSG;
		if (type != 2)
			continue;
		if (number == 1) { /* Resource: its attributes (1) */
			while (sub.p < sub.end) {
				if (!pb_field(&sub, &number, &type, &attrs, &x))
					return -EBADMSG;
				if (number != 1 || type != 2)
					continue;
				if (!key_value(attrs, &key, &text, &array))
					return -EBADMSG;
				if ((r = add_attr(ctx, key, text)))
					return r;
			}
		} else if (number == 2) { /* attributes: the thread-local reference data among them */
			if (!key_value(sub, &key, &text, &array))
				return -EBADMSG;
			r = 0;
			/* As for resource attributes, a repeated key keeps its first value. */
			if (key && !strcmp(key, "threadlocal.schema_version")) {
				if (seen_schema)
					ctx->skipped++;
				else
					ctx->thread_ctx = text && (!strcmp(text, "tlsdesc_v1_dev") || !strcmp(text, "tls_v1"));
				seen_schema = true;
			} else if (key && !strcmp(key, "threadlocal.attribute_key_map")) {
				if (seen_key_map)
					ctx->skipped++;
				else if (array.p)
					r = key_map(ctx, array);
				seen_key_map = true;
			}
			free(key);
			free(text);
			if (r)
				return r;
		}
	}
	return 0;
}

int process_ctx_decode(const uint8_t *payload, size_t len, struct process_ctx **out)
{
	struct process_ctx *ctx = calloc(1, sizeof(*ctx));
	int r;

	*out = NULL;
	if (!ctx)
		return -ENOMEM;
	if ((r = decode(ctx, payload, len))) {
		process_ctx_free(ctx);
		return r;
	}
	*out = ctx;
	return 0;
}

int process_ctx_fetch(process_ctx_read_fn read, void *read_ctx, uint64_t address, struct process_ctx **out)
{
	struct process_ctx_header h, again;
	uint8_t *payload = NULL;
	int r = -EAGAIN, got;

	*out = NULL;
	for (unsigned attempt = 0; attempt < READ_TRIES; attempt++) {
		if ((r = read(read_ctx, address, &h, sizeof(h))))
			goto out;
		if (memcmp(h.signature, "OTEL_CTX", 8) || (h.version != 1 && h.version != 2)) {
			r = -EBADMSG;
			goto out;
		}
		r = -EAGAIN;
		if (!h.published_at_ns)
			continue;
		if (h.payload_size > PROCESS_CTX_MAX_PAYLOAD) {
			r = -EFBIG;
			goto out;
		}
		free(payload);
		payload = malloc(h.payload_size ? h.payload_size : 1);
		if (!payload) {
			r = -ENOMEM;
			goto out;
		}
		got = h.payload_size ? read(read_ctx, h.payload, payload, h.payload_size) : 0;
		if (got && got != -EFAULT) {
			r = got;
			goto out;
		}
		if ((r = read(read_ctx, address, &again, sizeof(again))))
			goto out;
		if (again.published_at_ns != h.published_at_ns) {
			r = -EAGAIN; /* rewritten under the read (the payload may have moved) */
			continue;
		}
		/* A header that holds but points where the process has no memory is malformed. */
		if (got)
			r = -EBADMSG;
		break;
	}
	if (r)
		goto out;
	if ((r = process_ctx_decode(payload, h.payload_size, out)))
		goto out;
	(*out)->address = address;
	(*out)->published_at_ns = h.published_at_ns;
out:
	free(payload);
	return r;
}

int process_ctx_read(const char *proc_root, uint32_t pid, struct process_ctx **out)
{
	uint64_t address = 0;
	int r;

	*out = NULL;
	if ((r = find_mapping(proc_root, pid, &address)))
		return r;
	return process_ctx_fetch(read_memory, &pid, address, out);
}

void process_ctx_free(struct process_ctx *ctx)
{
	if (!ctx)
		return;
	for (size_t i = 0; i < ctx->nattrs; i++) {
		free(ctx->attrs[i].key);
		free(ctx->attrs[i].value);
	}
	for (size_t i = 0; ctx->keys && i < ctx->nkeys; i++)
		free(ctx->keys[i]);
	free(ctx->attrs);
	free(ctx->keys);
	free(ctx);
}
