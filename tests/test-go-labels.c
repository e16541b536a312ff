// SPDX-License-Identifier: Apache-2.0
/* The Go room's user-space parts (runtimes/go): the release from .go.buildinfo, its layout, and a
 * sample's goroutine labels turned into link attributes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "go_labels.h"
#include "go_process.h"

/* A .go.buildinfo header of Go 1.18+ with the version string inline. */
static size_t buildinfo(uint8_t *b, const char *version)
{
	size_t n = strlen(version);

	memset(b, 0, 64);
	memcpy(b, "\xff Go buildinf:", 14);
	b[14] = 8;
	b[15] = 2;
	b[32] = (uint8_t)n;
	memcpy(b + 33, version, n);
	return 33 + n;
}

static void test_buildinfo_minor(void **state)
{
	uint8_t b[64];
	size_t n;

	(void)state;
	n = buildinfo(b, "go1.19.8");
	assert_int_equal(go_process_buildinfo_minor(b, n), 19);
	n = buildinfo(b, "go1.26.8");
	assert_int_equal(go_process_buildinfo_minor(b, n), 26);
	n = buildinfo(b, "go1.24rc1");
	assert_int_equal(go_process_buildinfo_minor(b, n), 24);
	/* Cut short, a length past the bytes, no "go1.", an older header (no inline flag), no magic. */
	assert_int_equal(go_process_buildinfo_minor(b, 20), -ENOENT);
	n = buildinfo(b, "go1.26.8");
	b[32] = 60;
	assert_int_equal(go_process_buildinfo_minor(b, n), -EINVAL);
	n = buildinfo(b, "devel +abc");
	assert_int_equal(go_process_buildinfo_minor(b, n), -EINVAL);
	n = buildinfo(b, "go1.20.1");
	b[15] = 0;
	assert_int_equal(go_process_buildinfo_minor(b, n), -ENOENT);
	b[0] = 0;
	assert_int_equal(go_process_buildinfo_minor(b, n), -ENOENT);
	/* A varint that never ends. */
	n = buildinfo(b, "go1.20.1");
	memset(b + 32, 0xff, 32);
	assert_int_equal(go_process_buildinfo_minor(b, 64), -EINVAL);
}

static void test_layouts(void **state)
{
	struct otelprof_go_proc p = { 0 };

	(void)state;
	assert_int_equal(go_process_layout(19, &p), 0);
	assert_int_equal(p.layout, OTELPROF_GO_LABELS_MAP);
	assert_int_equal(p.g_labels, 360);
	assert_int_equal(go_process_layout(23, &p), 0);
	assert_int_equal(p.layout, OTELPROF_GO_LABELS_MAP);
	assert_int_equal(go_process_layout(26, &p), 0);
	assert_int_equal(p.layout, OTELPROF_GO_LABELS_SLICE);
	assert_int_equal(p.m_curg, 184);
	assert_int_equal(go_process_layout(18, &p), -ENOTSUP);
	assert_int_equal(go_process_layout(27, &p), -ENOTSUP);
}

/* A sample record with a labels tail (and a thread context after it when tc). */
struct record {
	struct otelprof_sample s;
	struct otelprof_go_labels gl;
	struct otelprof_trace_ctx tc;
};

static void put(struct otelprof_go_label *l, const char *key, const char *value)
{
	l->key_len = (uint8_t)strlen(key);
	l->value_len = (uint8_t)strlen(value);
	memcpy(l->key, key, l->key_len);
	memcpy(l->value, value, l->value_len);
}

static struct record *record_new(bool tc)
{
	struct record *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->s.hdr.kind = OTELPROF_RECORD_SAMPLE;
	r->s.hdr.size = sizeof(r->s) + sizeof(r->gl) + (tc ? sizeof(r->tc) : 0);
	r->s.flags = OTELPROF_SAMPLE_GO_LABELS | (tc ? OTELPROF_SAMPLE_TRACE_CTX : 0);
	return r;
}

static void test_link_sorted(void **state)
{
	struct record *r = record_new(false);
	struct go_labels_counters c = { 0 };
	uint8_t link[256];
	static const uint8_t want[] = "endpoint\0/a\0kind\0cpu\0tenant\0t1";
	size_t len;

	(void)state;
	put(&r->gl.label[0], "tenant", "t1");
	put(&r->gl.label[1], "endpoint", "/a");
	put(&r->gl.label[2], "kind", "cpu");
	r->gl.count = 3;
	r->gl.dropped = 2;
	len = go_labels_link(r, r->s.hdr.size, link, 0, sizeof(link), &c);
	assert_int_equal(len, 24 + sizeof(want));
	for (int i = 0; i < 24; i++)
		assert_int_equal(link[i], 0);
	assert_memory_equal(link + 24, want, sizeof(want));
	assert_int_equal(c.samples, 1);
	assert_int_equal(c.labels, 3);
	assert_int_equal(c.dropped, 2);
	free(r);
}

static void test_link_after_trace(void **state)
{
	struct record *r = record_new(true);
	struct go_labels_counters c = { 0 };
	uint8_t link[64];
	size_t len;

	(void)state;
	put(&r->gl.label[0], "endpoint", "/b");
	put(&r->gl.label[1], "", "no key");
	r->gl.count = 2;
	memset(link, 7, 30);
	/* After a trace link of 30 bytes: appended; the empty key dropped. */
	len = go_labels_link(r, r->s.hdr.size, link, 30, sizeof(link), &c);
	assert_int_equal(len, 30 + 12);
	assert_memory_equal(link + 30, "endpoint\0/b\0", 12);
	assert_int_equal(c.dropped, 1);
	/* No room for it: dropped and counted, the link kept. */
	len = go_labels_link(r, r->s.hdr.size, link, 60, sizeof(link), &c);
	assert_int_equal(len, 60);
	assert_int_equal(c.dropped, 3);
	free(r);
}

static void test_link_malformed(void **state)
{
	struct record *r = record_new(false);
	struct go_labels_counters c = { 0 };
	uint8_t link[64];

	(void)state;
	put(&r->gl.label[0], "k", "v");
	r->gl.count = 9; /* beyond the bound */
	assert_int_equal(go_labels_link(r, r->s.hdr.size, link, 0, sizeof(link), &c), 0);
	r->gl.count = 1;
	r->s.hdr.size = sizeof(r->s) + 10; /* too short for the tail */
	assert_int_equal(go_labels_link(r, sizeof(*r), link, 0, sizeof(link), &c), 0);
	r->s.hdr.size = sizeof(*r) + 1; /* past the data */
	assert_int_equal(go_labels_link(r, sizeof(*r), link, 0, sizeof(link), &c), 0);
	assert_int_equal(c.malformed, 3);
	/* A key with a NUL inside ends there; a length past the field is bounded. */
	r->s.hdr.size = sizeof(r->s) + sizeof(r->gl);
	put(&r->gl.label[0], "k", "v");
	r->gl.label[0].key_len = 200;
	r->gl.label[0].value_len = 200;
	assert_int_equal(go_labels_link(r, r->s.hdr.size, link, 0, sizeof(link), &c), 24 + 4);
	/* No flag: nothing. */
	r->s.flags = 0;
	assert_int_equal(go_labels_link(r, r->s.hdr.size, link, 5, sizeof(link), &c), 5);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buildinfo_minor), cmocka_unit_test(test_layouts),
		cmocka_unit_test(test_link_sorted),     cmocka_unit_test(test_link_after_trace),
		cmocka_unit_test(test_link_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
