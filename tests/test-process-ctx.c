// SPDX-License-Identifier: Apache-2.0
/*
 * process_ctx: the ProcessContext decoder and the OTEP 4719 read protocol on crafted bytes (the
 * bytes a hostile process may publish), and the OTEL_CTX mapping found in a fake /proc.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "process/process_ctx.h"
#include "pb-build.h"

static const char *attr(const struct process_ctx *ctx, const char *key)
{
	for (size_t i = 0; i < ctx->nattrs; i++)
		if (!strcmp(ctx->attrs[i].key, key))
			return ctx->attrs[i].value;
	return NULL;
}

/* Decode m (freed), expecting want; *out the context when 0. */
static int decode(struct msg *m, struct process_ctx **out)
{
	int r = process_ctx_decode(m->b, m->n, out);

	free(m);
	return r;
}

static void test_decode_valid(void **state)
{
	struct msg *attrs = msg_new(), *extra = msg_new(), *v;
	static const char *const names[] = { "http.route", NULL, "user.id" };
	struct process_ctx *ctx;

	put_sub(attrs, 1, key_value("service.name", any_string("checkout")));
	v = msg_new();
	put_tag(v, 2, 0);
	put_varint(v, 1);
	put_sub(attrs, 1, key_value("flag", v));
	v = msg_new();
	put_tag(v, 3, 0);
	put_varint(v, (uint64_t)-42);
	put_sub(attrs, 1, key_value("count", v));
	v = msg_new();
	put_tag(v, 4, 1);
	put_raw(v, &(double){ 0.5 }, 8);
	put_sub(attrs, 1, key_value("ratio", v));
	put_sub(attrs, 1, key_value("service.name", any_string("ignored: keys are unique")));
	put_sub(extra, 2, key_value("threadlocal.schema_version", any_string("tlsdesc_v1_dev")));
	put_sub(extra, 2, key_map_of(names, 3));

	assert_int_equal(decode(process_context(attrs, extra), &ctx), 0);
	assert_int_equal(ctx->nattrs, 4);
	assert_string_equal(attr(ctx, "service.name"), "checkout");
	assert_string_equal(attr(ctx, "flag"), "true");
	assert_string_equal(attr(ctx, "count"), "-42");
	assert_string_equal(attr(ctx, "ratio"), "0.5");
	assert_true(ctx->thread_ctx);
	assert_int_equal(ctx->nkeys, 3);
	assert_string_equal(ctx->keys[0], "http.route");
	assert_null(ctx->keys[1]);
	assert_string_equal(ctx->keys[2], "user.id");
	assert_int_equal(ctx->skipped, 2); /* the repeated key, the int key */
	assert_int_equal(ctx->address, 0);
	process_ctx_free(ctx);
}

static void test_decode_schema_versions(void **state)
{
	static const struct {
		const char *version;
		bool known;
	} cases[] = { { "tlsdesc_v1_dev", true }, { "tls_v1", true }, { "tls_v2", false }, { "", false },
		      { "tls_v1 ", false } };
	struct process_ctx *ctx;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct msg *extra = msg_new();

		put_sub(extra, 2, key_value("threadlocal.schema_version", any_string(cases[i].version)));
		assert_int_equal(decode(process_context(NULL, extra), &ctx), 0);
		assert_int_equal(ctx->thread_ctx, cases[i].known);
		assert_int_equal(ctx->nattrs, 0);
		process_ctx_free(ctx);
	}
}

static void test_decode_empty_and_unknown_fields(void **state)
{
	struct msg *m = msg_new(), *attrs;
	struct process_ctx *ctx;

	assert_int_equal(process_ctx_decode((const uint8_t *)"", 0, &ctx), 0);
	assert_int_equal(ctx->nattrs, 0);
	assert_false(ctx->thread_ctx);
	process_ctx_free(ctx);

	/* Unknown fields of every wire type this reader knows, at every level, are skipped. */
	put_tag(m, 9, 0);
	put_varint(m, 300);
	put_tag(m, 10, 1);
	put_raw(m, "12345678", 8);
	put_tag(m, 11, 5);
	put_raw(m, "1234", 4);
	put_string(m, 12, "unknown message");
	attrs = msg_new();
	put_tag(attrs, 7, 0);
	put_varint(attrs, 3);
	put_sub(attrs, 1, key_value("a", any_string("b")));
	put_msg(m, process_context(attrs, NULL));
	assert_int_equal(decode(m, &ctx), 0);
	assert_int_equal(ctx->nattrs, 1);
	assert_string_equal(attr(ctx, "a"), "b");
	process_ctx_free(ctx);
}

/* Every prefix of a valid payload decodes or is refused, never more. */
static void test_decode_truncated(void **state)
{
	struct msg *attrs = msg_new(), *extra = msg_new();
	static const char *const names[] = { "k0", "k1" };
	struct process_ctx *ctx;
	struct msg *m;

	put_sub(attrs, 1, key_value("service.name", any_string("svc")));
	put_sub(extra, 2, key_value("threadlocal.schema_version", any_string("tls_v1")));
	put_sub(extra, 2, key_map_of(names, 2));
	m = process_context(attrs, extra);
	for (size_t len = 0; len < m->n; len++) {
		/* A copy of exactly len bytes: ASan sees any read past it. */
		uint8_t *copy = malloc(len ? len : 1);
		int r;

		memcpy(copy, m->b, len);
		r = process_ctx_decode(copy, len, &ctx);
		free(copy);
		assert_true(r == 0 || r == -EBADMSG);
		if (r)
			assert_null(ctx);
		process_ctx_free(ctx);
	}
	free(m);
}

static void test_decode_bad_varints(void **state)
{
	static const struct {
		const char *bytes;
		size_t len;
		int want;
	} cases[] = {
		{ "\x80", 1, -EBADMSG },                                    /* truncated tag */
		{ "\x08\x80\x80", 3, -EBADMSG },                            /* truncated value */
		{ "\x0a\x80", 2, -EBADMSG },                                /* truncated length */
		{ "\x0a\x05" "abc", 5, -EBADMSG },                          /* length past the end */
		{ "\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11, -EBADMSG }, /* length 2^64-1 */
		/* 10-byte varints: the tenth byte holds bit 63 only. */
		{ "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11, 0 },
		{ "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11, -EBADMSG },
		{ "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11, -EBADMSG },
		{ "\x08\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00", 12, -EBADMSG }, /* 11 bytes */
		/* A length that wraps to 3 past 64 bits. */
		{ "\x0a\x83\x80\x80\x80\x80\x80\x80\x80\x80\x02" "abc", 14, -EBADMSG },
		{ "\x00\x00", 2, -EBADMSG },                                /* field 0 */
		{ "\x0b", 1, -EBADMSG },                                    /* start group */
		{ "\x0c", 1, -EBADMSG },                                    /* end group */
		{ "\x0e", 1, -EBADMSG },                                    /* wire type 6 */
		{ "\x0f", 1, -EBADMSG },                                    /* wire type 7 */
		{ "\x09" "1234567", 8, -EBADMSG },                          /* fixed64 short */
		{ "\x0d" "123", 4, -EBADMSG },                              /* fixed32 short */
	};
	struct process_ctx *ctx;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t *copy = malloc(cases[i].len);

		memcpy(copy, cases[i].bytes, cases[i].len);
		assert_int_equal(process_ctx_decode(copy, cases[i].len, &ctx), cases[i].want);
		free(copy);
		process_ctx_free(ctx);
	}
}

/* A malformed AnyValue or key map after a good string: refused, nothing kept (ASan: no leak). */
static void test_decode_malformed_inside(void **state)
{
	struct process_ctx *ctx;
	struct msg *v, *attrs, *extra, *array, *any;

	/* Resource attribute: string_value, then a truncated field. */
	v = msg_new();
	put_string(v, 1, "first");
	put_raw(v, "\x08", 1);
	attrs = msg_new();
	put_sub(attrs, 1, key_value("k", v));
	assert_int_equal(decode(process_context(attrs, NULL), &ctx), -EBADMSG);
	assert_null(ctx);

	/* Key map entry: string_value, then a bad wire type. */
	v = msg_new();
	put_string(v, 1, "key");
	put_raw(v, "\x0f", 1);
	array = msg_new();
	put_sub(array, 1, v);
	any = msg_new();
	put_sub(any, 5, array);
	extra = msg_new();
	put_sub(extra, 2, key_value("threadlocal.attribute_key_map", any));
	assert_int_equal(decode(process_context(NULL, extra), &ctx), -EBADMSG);

	/* Key map array: a good key, then a truncated field. */
	array = msg_new();
	put_sub(array, 1, any_string("key"));
	put_raw(array, "\x0a\x09", 2);
	any = msg_new();
	put_sub(any, 5, array);
	extra = msg_new();
	put_sub(extra, 2, key_value("threadlocal.attribute_key_map", any));
	assert_int_equal(decode(process_context(NULL, extra), &ctx), -EBADMSG);
}

/* Reference data with no value at all: nothing to read, and nothing left over from before (the
 * fuzzer found the key map read through an uninitialized array here). */
static void test_decode_key_without_value(void **state)
{
	struct msg *extra = msg_new(), *kv = msg_new();
	struct process_ctx *ctx;

	put_string(kv, 1, "threadlocal.attribute_key_map");
	put_sub(extra, 2, kv);
	kv = msg_new();
	put_string(kv, 1, "threadlocal.schema_version");
	put_sub(extra, 2, kv);
	assert_int_equal(decode(process_context(NULL, extra), &ctx), 0);
	assert_int_equal(ctx->nkeys, 0);
	assert_false(ctx->thread_ctx);
	process_ctx_free(ctx);
}

/* Nesting deeper than the schema is never followed: a value that is an array of arrays... */
static void test_decode_deep_nesting(void **state)
{
	struct msg *v = any_string("leaf"), *attrs, *extra;
	static const char *const names[] = { "k" };
	struct process_ctx *ctx;

	for (unsigned depth = 0; depth < 2000 && v->n < PROCESS_CTX_MAX_PAYLOAD / 4; depth++) {
		struct msg *array = msg_new(), *any = msg_new();

		put_sub(array, 1, v);
		put_sub(any, 5, array);
		v = any;
	}
	/* The same deep value as a resource attribute and as a key of the map. */
	attrs = msg_new();
	{
		struct msg *kv = msg_new();

		put_string(kv, 1, "deep");
		put_bytes(kv, 2, v->b, v->n);
		put_sub(attrs, 1, kv);
	}
	extra = msg_new();
	{
		struct msg *array = msg_new(), *any = msg_new();

		put_bytes(array, 1, v->b, v->n);
		put_sub(array, 1, any_string(names[0]));
		put_sub(any, 5, array);
		put_sub(extra, 2, key_value("threadlocal.attribute_key_map", any));
	}
	free(v);
	assert_int_equal(decode(process_context(attrs, extra), &ctx), 0);
	assert_int_equal(ctx->nattrs, 0); /* an array is not a value this reader keeps */
	assert_int_equal(ctx->nkeys, 2);
	assert_null(ctx->keys[0]);
	assert_string_equal(ctx->keys[1], "k");
	assert_int_equal(ctx->skipped, 2);
	process_ctx_free(ctx);
}

/* Known fields of another wire type are unknown fields: skipped, nothing else lost. */
static void test_decode_wrong_wire_types(void **state)
{
	struct msg *m = msg_new(), *attrs = msg_new(), *kv, *v;
	struct process_ctx *ctx;

	put_tag(m, 1, 0); /* resource as a varint */
	put_varint(m, 5);
	put_tag(m, 2, 5); /* an attribute as fixed32 */
	put_raw(m, "abcd", 4);
	kv = msg_new(); /* key as a varint: no key */
	put_tag(kv, 1, 0);
	put_varint(kv, 1);
	put_sub(kv, 2, any_string("v"));
	put_sub(attrs, 1, kv);
	v = msg_new(); /* string_value, then bool_value as fixed64: the string stays */
	put_string(v, 1, "kept");
	put_tag(v, 2, 1);
	put_raw(v, "\1\0\0\0\0\0\0\0", 8);
	put_sub(attrs, 1, key_value("a", v));
	v = msg_new(); /* string_value, then an unknown field: the string stays */
	put_string(v, 1, "kept too");
	put_tag(v, 15, 0);
	put_varint(v, 1);
	put_sub(attrs, 1, key_value("b", v));
	v = msg_new(); /* string_value, then int_value: the last of the oneof wins */
	put_string(v, 1, "replaced");
	put_tag(v, 3, 0);
	put_varint(v, 9);
	put_sub(attrs, 1, key_value("c", v));
	v = msg_new(); /* string_value, then bytes_value (not kept): the last wins, no value */
	put_string(v, 1, "replaced");
	put_bytes(v, 7, "\xff", 1);
	put_sub(attrs, 1, key_value("d", v));
	put_msg(m, process_context(attrs, NULL));
	assert_int_equal(decode(m, &ctx), 0);
	assert_int_equal(ctx->nattrs, 3);
	assert_string_equal(attr(ctx, "a"), "kept");
	assert_string_equal(attr(ctx, "b"), "kept too");
	assert_string_equal(attr(ctx, "c"), "9");
	assert_null(attr(ctx, "d"));
	assert_int_equal(ctx->skipped, 2);
	process_ctx_free(ctx);
}

static void test_decode_strings(void **state)
{
	static const char *const bad[] = {
		"\xff", "\xc0\x80", "\xc1\xbf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80",
		"\xe2\x82", "a\x80", "\xf0\x9f\x98",
	};
	char *longest = malloc(PROCESS_CTX_MAX_STRING + 2);
	struct msg *attrs = msg_new();
	struct process_ctx *ctx;
	char key[32];

	memset(longest, 'x', PROCESS_CTX_MAX_STRING + 1);
	longest[PROCESS_CTX_MAX_STRING + 1] = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(key, sizeof(key), "bad%zu", i);
		put_sub(attrs, 1, key_value(key, any_string(bad[i])));
	}
	put_sub(attrs, 1, key_value("too.long", any_string(longest)));
	put_sub(attrs, 1, key_value(longest, any_string("key too long")));
	put_sub(attrs, 1, key_value("", any_string("empty key")));
	{
		/* A string with a NUL inside. */
		struct msg *kv = msg_new();

		put_string(kv, 1, "nul");
		put_tag(kv, 2, 2);
		put_varint(kv, 5);
		put_raw(kv, "\x0a\x03" "a\0b", 5);
		put_sub(attrs, 1, kv);
	}
	longest[PROCESS_CTX_MAX_STRING] = 0;
	put_sub(attrs, 1, key_value("longest", any_string(longest)));
	put_sub(attrs, 1, key_value("utf8", any_string("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf")));
	assert_int_equal(decode(process_context(attrs, NULL), &ctx), 0);
	assert_int_equal(ctx->nattrs, 2);
	assert_int_equal(strlen(attr(ctx, "longest")), PROCESS_CTX_MAX_STRING);
	assert_string_equal(attr(ctx, "utf8"), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf");
	assert_int_equal(ctx->skipped, sizeof(bad) / sizeof(bad[0]) + 4);
	process_ctx_free(ctx);
	free(longest);
}

static void test_utf8_valid(void **state)
{
	assert_true(utf8_valid("", 0));
	assert_true(utf8_valid("ascii", 5));
	assert_true(utf8_valid("\xc2\x80", 2));
	assert_true(utf8_valid("\xef\xbf\xbf", 3));
	assert_true(utf8_valid("\xf0\x90\x80\x80", 4));
	assert_false(utf8_valid("\xc2", 1));
	assert_false(utf8_valid("\xc2\x80", 1)); /* the length bounds the read */
	assert_false(utf8_valid("\xe0\x9f\xbf", 3));
	assert_false(utf8_valid("\xf0\x8f\xbf\xbf", 4));
	assert_false(utf8_valid("\xee\x80\x41", 3));
	{
		/* Repaired in place: each byte that starts no well-formed sequence becomes '?'. */
		char bad[] = "ok\xff\xc2\x80x\xe0\x9f\xbfz\xc2";

		assert_int_equal(utf8_repair(bad, strlen(bad)), 5);
		assert_string_equal(bad, "ok?\xc2\x80x???z?");
		assert_true(utf8_valid(bad, strlen(bad)));
	}
}

static void test_decode_too_many(void **state)
{
	struct msg *attrs = msg_new(), *extra = msg_new();
	static const char *names[PROCESS_CTX_MAX_KEYS + 44];
	char (*buf)[16] = calloc(PROCESS_CTX_MAX_KEYS + 44, 16);
	struct process_ctx *ctx;

	for (unsigned i = 0; i < PROCESS_CTX_MAX_ATTRS + 72; i++) {
		char key[16];

		snprintf(key, sizeof(key), "a%u", i);
		put_sub(attrs, 1, key_value(key, any_string("v")));
	}
	for (unsigned i = 0; i < PROCESS_CTX_MAX_KEYS + 44; i++) {
		snprintf(buf[i], 16, "k%u", i);
		names[i] = buf[i];
	}
	put_sub(extra, 2, key_map_of(names, PROCESS_CTX_MAX_KEYS + 44));
	assert_int_equal(decode(process_context(attrs, extra), &ctx), 0);
	assert_int_equal(ctx->nattrs, PROCESS_CTX_MAX_ATTRS);
	assert_string_equal(ctx->attrs[PROCESS_CTX_MAX_ATTRS - 1].key, "a127");
	assert_int_equal(ctx->nkeys, PROCESS_CTX_MAX_KEYS);
	assert_string_equal(ctx->keys[PROCESS_CTX_MAX_KEYS - 1], "k255");
	assert_int_equal(ctx->skipped, 72 + 44);
	process_ctx_free(ctx);
	free(buf);
}

/* Reference data given twice: the first wins, as for resource attributes (keys are unique). */
static void test_decode_repeated_reference_data(void **state)
{
	static const char *const first[] = { "a", "b" }, *const second[] = { "c", "d", "e" };
	struct msg *extra = msg_new();
	struct process_ctx *ctx;

	put_sub(extra, 2, key_value("threadlocal.schema_version", any_string("tls_v1")));
	put_sub(extra, 2, key_value("threadlocal.schema_version", any_string("tls_v9")));
	put_sub(extra, 2, key_map_of(first, 2));
	put_sub(extra, 2, key_map_of(second, 3));
	assert_int_equal(decode(process_context(NULL, extra), &ctx), 0);
	assert_true(ctx->thread_ctx);
	assert_int_equal(ctx->nkeys, 2);
	assert_string_equal(ctx->keys[0], "a");
	assert_string_equal(ctx->keys[1], "b");
	assert_int_equal(ctx->skipped, 2);
	process_ctx_free(ctx);
}

/*
 * A fake process for the read protocol: the header at HEADER_AT, its payload wherever it says;
 * header reads may see published_at_ns 0 or a new value.
 */
#define HEADER_AT 0x7f0000001000ULL
#define PAYLOAD_AT 0x7f0000100000ULL

struct fake {
	struct process_ctx_header h;
	const uint8_t *payload;
	size_t payload_len;
	unsigned header_reads, payload_reads;
	const uint64_t *seen; /* published_at_ns the header reads see in turn (the last one after) */
	size_t nseen;
	bool changing;        /* every header read sees a new published_at_ns */
	int header_error;     /* the header read fails so */
};

static int fake_read(void *ctx, uint64_t address, void *buf, size_t len)
{
	struct fake *f = ctx;

	if (address == HEADER_AT && len == sizeof(f->h)) {
		struct process_ctx_header h = f->h;

		if (f->header_error)
			return f->header_error;
		if (f->changing)
			h.published_at_ns += f->header_reads;
		else if (f->nseen)
			h.published_at_ns = f->seen[f->header_reads < f->nseen ? f->header_reads : f->nseen - 1];
		f->header_reads++;
		memcpy(buf, &h, len);
		return 0;
	}
	if (address >= PAYLOAD_AT && address - PAYLOAD_AT <= f->payload_len &&
	    len <= f->payload_len - (address - PAYLOAD_AT)) {
		f->payload_reads++;
		memcpy(buf, f->payload + (address - PAYLOAD_AT), len);
		return 0;
	}
	return -EFAULT;
}

static void fake_init(struct fake *f, const struct msg *payload)
{
	*f = (struct fake){ .payload = payload->b, .payload_len = payload->n };
	memcpy(f->h.signature, "OTEL_CTX", 8);
	f->h.version = 2;
	f->h.payload_size = (uint32_t)payload->n;
	f->h.published_at_ns = 1000;
	f->h.payload = PAYLOAD_AT;
}

static struct msg *service_payload(void)
{
	struct msg *attrs = msg_new();

	put_sub(attrs, 1, key_value("service.name", any_string("svc")));
	return process_context(attrs, NULL);
}

static void test_fetch(void **state)
{
	struct msg *payload = service_payload();
	struct process_ctx *ctx;
	struct fake f;

	fake_init(&f, payload);
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), 0);
	assert_int_equal(ctx->address, HEADER_AT);
	assert_int_equal(ctx->published_at_ns, 1000);
	assert_string_equal(attr(ctx, "service.name"), "svc");
	assert_int_equal(f.header_reads, 2);
	process_ctx_free(ctx);

	fake_init(&f, payload); /* the development version */
	f.h.version = 1;
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), 0);
	process_ctx_free(ctx);

	fake_init(&f, payload); /* nothing published but the header */
	f.h.payload_size = 0;
	f.h.payload = 0;
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), 0);
	assert_int_equal(ctx->nattrs, 0);
	assert_int_equal(f.payload_reads, 0);
	process_ctx_free(ctx);
	free(payload);
}

static void test_fetch_bad_header(void **state)
{
	struct msg *payload = service_payload();
	struct process_ctx *ctx;
	struct fake f;

	fake_init(&f, payload);
	memcpy(f.h.signature, "OTEL_CTY", 8);
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), -EBADMSG);
	assert_null(ctx);
	for (uint32_t version = 0; version < 5; version += 3) {
		fake_init(&f, payload);
		f.h.version = version;
		assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), -EBADMSG);
	}
	fake_init(&f, payload);
	f.h.version = 0x02000000; /* 2, but big-endian */
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), -EBADMSG);

	fake_init(&f, payload);
	f.header_error = -ESRCH;
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), -ESRCH);

	fake_init(&f, payload); /* payload_size over the bytes there */
	f.h.payload_size = (uint32_t)payload->n + 1;
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), -EBADMSG);

	fake_init(&f, payload); /* payload where the process has nothing */
	f.h.payload = 0;
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), -EBADMSG);
	fake_init(&f, payload);
	f.h.payload = UINT64_MAX - 3;
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), -EBADMSG);

	fake_init(&f, payload); /* a payload that is not a ProcessContext */
	f.payload = (const uint8_t *)"\x0a\x7f";
	f.payload_len = f.h.payload_size = 2;
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), -EBADMSG);
	free(payload);
}

static void test_fetch_payload_size(void **state)
{
	struct msg *big = msg_new();
	struct process_ctx *ctx;
	struct fake f;

	/* Exactly the bound: an unknown field filling it (tag 1 byte, length 3), then one attribute. */
	{
		struct msg *attrs = msg_new(), *pc;

		put_sub(attrs, 1, key_value("k", any_string("v")));
		pc = process_context(attrs, NULL);
		put_tag(big, 15, 2);
		put_varint(big, PROCESS_CTX_MAX_PAYLOAD - 4 - pc->n);
		big->n += PROCESS_CTX_MAX_PAYLOAD - 4 - pc->n;
		put_msg(big, pc);
	}
	assert_int_equal(big->n, PROCESS_CTX_MAX_PAYLOAD);
	fake_init(&f, big);
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), 0);
	assert_string_equal(attr(ctx, "k"), "v");
	process_ctx_free(ctx);

	big->n++;
	fake_init(&f, big);
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), -EFBIG);
	assert_int_equal(f.payload_reads, 0);
	f.h.payload_size = UINT32_MAX;
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), -EFBIG);
	free(big);
}

static void test_fetch_torn(void **state)
{
	static const uint64_t zero[] = { 0 }, late[] = { 0, 0, 9 }, moved[] = { 1, 2, 2 }, zeroed[] = { 5, 0, 5 };
	struct msg *payload = service_payload();
	struct process_ctx *ctx;
	struct fake f;

	fake_init(&f, payload); /* being written at every try */
	f.seen = zero, f.nseen = 1;
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), -EAGAIN);
	assert_null(ctx);
	assert_int_equal(f.header_reads, 3);
	assert_int_equal(f.payload_reads, 0);

	fake_init(&f, payload); /* being written at the first two tries only */
	f.seen = late, f.nseen = 3;
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), 0);
	assert_int_equal(ctx->published_at_ns, 9);
	process_ctx_free(ctx);

	fake_init(&f, payload); /* rewritten under every read */
	f.changing = true;
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), -EAGAIN);
	assert_int_equal(f.header_reads, 6);

	fake_init(&f, payload); /* rewritten under the first read: the second holds */
	f.seen = moved, f.nseen = 3;
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), 0);
	assert_int_equal(ctx->published_at_ns, 2);
	process_ctx_free(ctx);

	fake_init(&f, payload); /* zeroed under the first read */
	f.seen = zeroed, f.nseen = 3;
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), 0);
	assert_int_equal(ctx->published_at_ns, 5);
	assert_int_equal(f.header_reads, 4);
	process_ctx_free(ctx);

	/* A payload gone under the read (unmapped by its writer): torn, not malformed. */
	fake_init(&f, payload);
	f.h.payload = 0;
	f.changing = true;
	assert_int_equal(process_ctx_fetch(fake_read, &f, HEADER_AT, &ctx), -EAGAIN);
	free(payload);
}

/* A fake /proc holding this process's maps: the mapping is found by name, its header read. */
struct fake_proc {
	char root[64];
	char maps[128];
};

static void fake_proc_write(struct fake_proc *p, const char *text)
{
	char dir[96];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/%d", p->root, (int)getpid());
	mkdir(dir, 0700);
	snprintf(p->maps, sizeof(p->maps), "%s/maps", dir);
	f = fopen(p->maps, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void fake_proc_remove(struct fake_proc *p)
{
	char dir[96];

	unlink(p->maps);
	snprintf(dir, sizeof(dir), "%s/%d", p->root, (int)getpid());
	rmdir(dir);
	rmdir(p->root);
}

static bool can_read_self(void)
{
	char src = 'x', dst = 0;
	struct iovec local = { &dst, 1 }, remote = { &src, 1 };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1 && dst == 'x';
}

static void test_read_mapping(void **state)
{
	static const char *const names[] = { "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]", "/memfd:OTEL_CTX (deleted)" };
	struct msg *payload = service_payload();
	struct process_ctx_header h = { .version = 2, .published_at_ns = 7 };
	struct fake_proc p;
	struct process_ctx *ctx;
	char *text = malloc(8192), path[600];

	strcpy(p.root, "/tmp/test-process-ctx.XXXXXX");
	assert_non_null(mkdtemp(p.root));
	memcpy(h.signature, "OTEL_CTX", 8);
	h.payload_size = (uint32_t)payload->n;
	h.payload = (uint64_t)(uintptr_t)payload->b;

	fake_proc_write(&p, "00400000-00401000 r-xp 00000000 fd:01 12 /usr/bin/app\n");
	assert_int_equal(process_ctx_read(p.root, (uint32_t)getpid(), &ctx), -ENOENT);
	assert_null(ctx);

	/* A mapping line longer than the reader's buffer, whose path holds a fake line: not a mapping. */
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = 0;
	snprintf(text, 8192, "00400000-00401000 r-xp 00000000 fd:01 12 /tmp/%.*s%016" PRIx64 "-%016" PRIx64
		 " rw-s 00000000 00:01 1 [anon:OTEL_CTX]\n", 460, path, (uint64_t)(uintptr_t)&h,
		 (uint64_t)(uintptr_t)&h + 4096);
	fake_proc_write(&p, text);
	assert_int_equal(process_ctx_read(p.root, (uint32_t)getpid(), &ctx), -ENOENT);

	if (!can_read_self()) {
		print_message("process_vm_readv on this process refused: the mapping's header is not read\n");
	} else {
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			snprintf(text, 8192,
				 "00400000-00401000 r-xp 00000000 fd:01 12 /usr/bin/app\n"
				 "%" PRIx64 "-%" PRIx64 " rw-s 00000000 00:01 1   %s\n",
				 (uint64_t)(uintptr_t)&h, (uint64_t)(uintptr_t)&h + 4096, names[i]);
			fake_proc_write(&p, text);
			assert_int_equal(process_ctx_read(p.root, (uint32_t)getpid(), &ctx), 0);
			assert_int_equal(ctx->address, (uint64_t)(uintptr_t)&h);
			assert_string_equal(attr(ctx, "service.name"), "svc");
			process_ctx_free(ctx);
		}
	}
	fake_proc_remove(&p);
	assert_int_equal(process_ctx_read(p.root, (uint32_t)getpid(), &ctx), -ENOENT);
	free(text);
	free(payload);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_valid),
		cmocka_unit_test(test_decode_schema_versions),
		cmocka_unit_test(test_decode_empty_and_unknown_fields),
		cmocka_unit_test(test_decode_truncated),
		cmocka_unit_test(test_decode_bad_varints),
		cmocka_unit_test(test_decode_malformed_inside),
		cmocka_unit_test(test_decode_key_without_value),
		cmocka_unit_test(test_decode_deep_nesting),
		cmocka_unit_test(test_decode_wrong_wire_types),
		cmocka_unit_test(test_decode_strings),
		cmocka_unit_test(test_utf8_valid),
		cmocka_unit_test(test_decode_too_many),
		cmocka_unit_test(test_decode_repeated_reference_data),
		cmocka_unit_test(test_fetch),
		cmocka_unit_test(test_fetch_bad_header),
		cmocka_unit_test(test_fetch_payload_size),
		cmocka_unit_test(test_fetch_torn),
		cmocka_unit_test(test_read_mapping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
