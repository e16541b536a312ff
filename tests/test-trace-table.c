// SPDX-License-Identifier: Apache-2.0
/*
 * trace_table: entries by pid (insert, look up, retire, forget, full), rejections counted by reason,
 * and the thread context record's attributes, over a fake process whose context is read through
 * the real read protocol and decoder.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pb-build.h"
#include "process/trace_table.h"
#include "profile/aggregate.h"

#define NS 1000000000ULL
#define HEADER_AT 0x1000ULL
#define PAYLOAD_AT 0x100000ULL

/* What every process publishes, and what the table's hooks saw. */
struct source {
	struct msg *payload;
	struct process_ctx_header h;
	int error;             /* reading /proc fails so (before the protocol) */
	unsigned reads;
	int resolve_error;
	unsigned resolves;
	int publish_error;
	unsigned published, cleared;
	struct otelprof_trace_proc last;
};

static int source_memory(void *ctx, uint64_t address, void *buf, size_t len)
{
	struct source *s = ctx;

	if (address == HEADER_AT && len == sizeof(s->h)) {
		memcpy(buf, &s->h, len);
		return 0;
	}
	if (address == PAYLOAD_AT && len <= s->payload->n) {
		memcpy(buf, s->payload->b, len);
		return 0;
	}
	return -EFAULT;
}

static int source_read(void *ctx, const char *proc_root, uint32_t pid, struct process_ctx **out)
{
	struct source *s = ctx;

	(void)proc_root, (void)pid;
	s->reads++;
	if (s->error) {
		*out = NULL;
		return s->error;
	}
	return process_ctx_fetch(source_memory, s, HEADER_AT, out);
}

static int source_resolve(void *ctx, const char *proc_root, uint32_t pid, struct otelprof_trace_proc *out)
{
	struct source *s = ctx;

	(void)proc_root;
	s->resolves++;
	if (s->resolve_error)
		return s->resolve_error;
	*out = (struct otelprof_trace_proc){ .tp_offset = -(int64_t)pid, .mode = OTELPROF_TLS_STATIC };
	return 0;
}

static int source_publish(void *ctx, uint32_t pid, const struct otelprof_trace_proc *entry)
{
	struct source *s = ctx;

	(void)pid;
	if (!entry) {
		s->cleared++;
		return 0;
	}
	if (s->publish_error)
		return s->publish_error;
	s->published++;
	s->last = *entry;
	return 0;
}

/* A context naming the service, the schema (thread records: thread_ctx) and keys. */
static void source_set(struct source *s, bool thread_ctx, const char *const *keys, size_t nkeys)
{
	struct msg *attrs = msg_new(), *extra = msg_new();

	free(s->payload);
	put_sub(attrs, 1, key_value("service.name", any_string("svc")));
	if (thread_ctx)
		put_sub(extra, 2, key_value("threadlocal.schema_version", any_string("tls_v1")));
	put_sub(extra, 2, key_map_of(keys, nkeys));
	s->payload = process_context(attrs, extra);
	memcpy(s->h.signature, "OTEL_CTX", 8);
	s->h.version = 2;
	s->h.payload_size = (uint32_t)s->payload->n;
	s->h.published_at_ns = 1;
	s->h.payload = PAYLOAD_AT;
}

static const char *const route_user[] = { "http.route", "user.id" };

static struct trace_table *table_new(struct source *s, size_t max)
{
	struct trace_table *t;

	memset(s, 0, sizeof(*s));
	source_set(s, false, route_user, 2);
	t = trace_table_new(&(struct trace_table_config){ .max_processes = max, .publish = source_publish,
							  .publish_ctx = s, .read_context = source_read,
							  .resolve_thread = source_resolve, .source_ctx = s });
	assert_non_null(t);
	return t;
}

static void table_free(struct trace_table *t, struct source *s)
{
	trace_table_free(t);
	free(s->payload);
}

static const uint64_t *counter(struct trace_table *t, enum trace_reject why)
{
	return &trace_table_counters(t)->rejected[why];
}

/* A record with the given ids byte and attrs_data. */
static struct otelprof_trace_ctx *record(uint8_t id, const void *attrs, size_t len)
{
	struct otelprof_trace_ctx *tc = calloc(1, sizeof(*tc));

	memset(tc->trace_id, id, 16);
	memset(tc->span_id, id, 8);
	tc->valid = 1;
	tc->attrs_size = tc->attrs_copied = (uint16_t)len;
	memcpy(tc->attrs, attrs, len);
	return tc;
}

/* Whether (pid, start_ns) has a live entry: a record of it gets a link. */
static bool live(struct trace_table *t, uint32_t pid, uint64_t start_ns)
{
	struct otelprof_trace_ctx *tc = record(1, "", 0);
	uint8_t link[AGG_LINK_MAX];
	size_t len = trace_table_link(t, pid, start_ns, tc, link, 0);

	free(tc);
	return len == AGG_LINK_IDS;
}

static void test_insert_lookup_forget(void **state)
{
	struct source s;
	struct trace_table *t = table_new(&s, 0);

	for (uint32_t pid = 1; pid <= OTELPROF_MAX_TRACE_PROCS; pid++)
		trace_table_check(t, pid, pid * 10ULL, pid + 7ULL, 0, true, 0);
	assert_int_equal(trace_table_count(t), OTELPROF_MAX_TRACE_PROCS);
	trace_table_check(t, 99999, 1, 1, 0, true, 0);
	assert_int_equal(trace_table_counters(t)->table_full, 1);
	assert_int_equal(trace_table_counters(t)->contexts_read, OTELPROF_MAX_TRACE_PROCS + 1);
	assert_int_equal(trace_table_count(t), OTELPROF_MAX_TRACE_PROCS);
	for (uint32_t pid = 1; pid <= OTELPROF_MAX_TRACE_PROCS; pid++) {
		assert_non_null(trace_table_context(t, pid, pid + 7ULL));
		assert_null(trace_table_context(t, pid, pid + 8ULL));
		assert_true(live(t, pid, pid * 10ULL));
		assert_false(live(t, pid, pid * 10ULL + 1));
	}
	assert_string_equal(trace_table_context(t, 1, 8)->attrs[0].value, "svc");

	/* Forget every other one; then the room is taken by others. */
	for (uint32_t pid = 1; pid <= OTELPROF_MAX_TRACE_PROCS; pid += 2)
		trace_table_forget(t, pid, pid + 7ULL);
	assert_int_equal(trace_table_count(t), OTELPROF_MAX_TRACE_PROCS / 2);
	trace_table_forget(t, 2, 1); /* another instance: nothing */
	trace_table_forget(t, 424242, 1);
	assert_int_equal(trace_table_count(t), OTELPROF_MAX_TRACE_PROCS / 2);
	for (uint32_t pid = 1; pid <= OTELPROF_MAX_TRACE_PROCS; pid++) {
		assert_int_equal(trace_table_context(t, pid, pid + 7ULL) != NULL, pid % 2 == 0);
		assert_int_equal(live(t, pid, pid * 10ULL), pid % 2 == 0);
	}
	for (uint32_t pid = 1; pid <= OTELPROF_MAX_TRACE_PROCS / 2; pid++)
		trace_table_check(t, 1u << 22 | pid << 8, pid, pid, 0, true, 0);
	assert_int_equal(trace_table_count(t), OTELPROF_MAX_TRACE_PROCS);
	assert_int_equal(trace_table_counters(t)->table_full, 1);
	for (uint32_t pid = 1; pid <= OTELPROF_MAX_TRACE_PROCS / 2; pid++) {
		assert_true(live(t, 1u << 22 | pid << 8, pid));
		assert_true(live(t, pid * 2, pid * 20ULL));
	}
	table_free(t, &s);
}

/* A small table (every bucket shared) against a model, through a long run of random changes. */
static void test_model(void **state)
{
	enum { MAX = 5, PIDS = 23, INSTANCES = 3 };
	struct {
		bool present, retired;
	} model[PIDS][INSTANCES] = { 0 };
	struct source s;
	struct trace_table *t = table_new(&s, MAX);
	uint32_t seed = 1;
	size_t n = 0;

	for (unsigned step = 0; step < 20000; step++) {
		uint32_t pid, instance, op, live_instance = INSTANCES;

		seed = seed * 1103515245u + 12345u;
		pid = (seed >> 8) % PIDS;
		instance = (seed >> 16) % INSTANCES;
		op = (seed >> 24) % 3;
		for (uint32_t i = 0; i < INSTANCES; i++)
			if (model[pid][i].present && !model[pid][i].retired)
				live_instance = i;
		if (op == 0) { /* a sample of (pid, instance): start_ns is the pid's, as after an exec */
			/* mappings changed at every step: a sample may always look */
			trace_table_check(t, pid, pid * 3ULL, instance, step, false, step * NS);
			if (live_instance == INSTANCES && n < MAX && !model[pid][instance].present) {
				model[pid][instance].present = true;
				n++;
			}
		} else if (op == 1) {
			trace_table_retire(t, pid);
			for (uint32_t i = 0; i < INSTANCES; i++)
				model[pid][i].retired = model[pid][i].present;
		} else {
			trace_table_forget(t, pid, instance);
			if (model[pid][instance].present)
				n--;
			model[pid][instance].present = model[pid][instance].retired = false;
		}
		assert_int_equal(trace_table_count(t), n);
		for (uint32_t p = 0; p < PIDS; p++) {
			bool any_live = false;

			for (uint32_t i = 0; i < INSTANCES; i++) {
				assert_int_equal(trace_table_context(t, p, i) != NULL, model[p][i].present);
				any_live |= model[p][i].present && !model[p][i].retired;
			}
			assert_int_equal(live(t, p, p * 3ULL), any_live);
		}
	}
	table_free(t, &s);
}

static void test_full(void **state)
{
	struct source s;
	struct trace_table *t = table_new(&s, 8);

	for (uint32_t pid = 100; pid < 110; pid++)
		trace_table_check(t, pid, 1, 1, 0, true, 0);
	assert_int_equal(trace_table_count(t), 8);
	assert_int_equal(trace_table_counters(t)->table_full, 2);
	assert_null(trace_table_context(t, 108, 1));
	trace_table_forget(t, 100, 1);
	trace_table_check(t, 108, 1, 1, 0, true, 0);
	assert_non_null(trace_table_context(t, 108, 1));
	assert_int_equal(trace_table_count(t), 8);
	table_free(t, &s);
}

/* An exec: the old instance stays for its samples, retired; the new one gets its own entry. */
static void test_retire_exec(void **state)
{
	struct source s;
	struct trace_table *t = table_new(&s, 0);
	struct otelprof_trace_ctx *tc = record(3, "", 0);
	uint8_t link[AGG_LINK_MAX];

	source_set(&s, true, route_user, 2);
	trace_table_check(t, 5, 50, 1, 0, false, 0);
	assert_int_equal(s.resolves, 1);
	assert_int_equal(s.published, 1);
	assert_int_equal(s.last.start_ns, 50);
	assert_int_equal(trace_table_counters(t)->threads_resolved, 1);

	trace_table_retire(t, 5);
	assert_int_equal(s.cleared, 1);
	assert_int_equal(trace_table_link(t, 5, 50, tc, link, 0), 0);
	assert_int_equal(*counter(t, TRACE_REJECT_NO_PROCESS), 1);
	assert_non_null(trace_table_context(t, 5, 1));

	trace_table_check(t, 5, 50, 2, 0, false, 2 * NS);
	assert_int_equal(trace_table_count(t), 2);
	assert_int_equal(s.published, 2);
	assert_int_equal(trace_table_link(t, 5, 50, tc, link, 0), AGG_LINK_IDS);
	trace_table_forget(t, 5, 1);
	assert_null(trace_table_context(t, 5, 1));
	assert_non_null(trace_table_context(t, 5, 2));
	assert_int_equal(s.cleared, 1);
	trace_table_forget(t, 5, 2);
	assert_int_equal(s.cleared, 2);
	assert_int_equal(trace_table_count(t), 0);
	free(tc);
	table_free(t, &s);
}

static void test_resolve_backoff_and_map_failure(void **state)
{
	struct source s;
	struct trace_table *t = table_new(&s, 0);

	source_set(&s, true, route_user, 2);
	s.resolve_error = -ENOENT; /* the library is still to be dlopen'ed */
	trace_table_check(t, 9, 1, 1, 0, true, 0);
	assert_int_equal(s.resolves, 1);
	trace_table_tick(t, NS / 2);
	assert_int_equal(s.resolves, 1);
	trace_table_tick(t, NS); /* 1 s, then 2 s more, then 4 s more */
	assert_int_equal(s.resolves, 2);
	trace_table_tick(t, 2 * NS);
	assert_int_equal(s.resolves, 2);
	trace_table_tick(t, 3 * NS);
	assert_int_equal(s.resolves, 3);
	s.resolve_error = 0;
	s.publish_error = -E2BIG;
	trace_table_tick(t, 7 * NS);
	assert_int_equal(s.resolves, 4);
	assert_int_equal(trace_table_counters(t)->map_failed, 1);
	assert_int_equal(trace_table_counters(t)->threads_resolved, 0);
	s.publish_error = 0;
	trace_table_tick(t, 7 * NS);
	assert_int_equal(trace_table_counters(t)->threads_resolved, 1);
	trace_table_tick(t, 1000 * NS);
	assert_int_equal(s.resolves, 5);
	table_free(t, &s);
}

/* Contexts refused by reason; a process without one is not counted. */
static void test_rejections(void **state)
{
	struct source s;
	struct trace_table *t = table_new(&s, 0);
	uint32_t pid = 1;

	s.error = -ENOENT;
	trace_table_check(t, pid++, 1, 1, 0, true, 0);
	s.error = -ESRCH;
	trace_table_check(t, pid++, 1, 1, 0, true, 0);
	s.error = 0;
	for (unsigned i = 0; i < TRACE_REJECT_MAX; i++)
		assert_int_equal(*counter(t, i), 0);

	memcpy(s.h.signature, "OTEL_CTx", 8);
	trace_table_check(t, pid++, 1, 1, 0, true, 0);
	memcpy(s.h.signature, "OTEL_CTX", 8);
	s.h.version = 3;
	trace_table_check(t, pid++, 1, 1, 0, true, 0);
	s.h.version = 2;
	s.h.payload = 0;
	trace_table_check(t, pid++, 1, 1, 0, true, 0);
	s.h.payload = PAYLOAD_AT;
	s.payload->b[0] = 0x0f; /* wire type 7 */
	trace_table_check(t, pid++, 1, 1, 0, true, 0);
	assert_int_equal(*counter(t, TRACE_REJECT_CONTEXT_MALFORMED), 4);

	s.h.payload_size = PROCESS_CTX_MAX_PAYLOAD + 1;
	trace_table_check(t, pid++, 1, 1, 0, true, 0);
	assert_int_equal(*counter(t, TRACE_REJECT_CONTEXT_TOO_BIG), 1);
	s.h.published_at_ns = 0;
	trace_table_check(t, pid++, 1, 1, 0, true, 0);
	assert_int_equal(*counter(t, TRACE_REJECT_CONTEXT_TORN), 1);
	assert_int_equal(trace_table_count(t), 0);
	assert_int_equal(trace_table_counters(t)->contexts_read, 0);
	table_free(t, &s);
}

/* Processes without a context: looked at again when their mappings changed, at most every
 * TRACE_RECHECK_NS each, 64 a second over all. */
static void test_check_budget(void **state)
{
	struct source s;
	struct trace_table *t = table_new(&s, 0);

	s.error = -ENOENT;
	trace_table_check(t, 1, 1, 1, 30, false, 0);
	assert_int_equal(s.reads, 1);
	trace_table_check(t, 1, 1, 1, 30, false, 100 * NS); /* same mappings: nothing new to find */
	assert_int_equal(s.reads, 1);
	trace_table_check(t, 1, 1, 1, 31, false, 100 * NS + 1);
	assert_int_equal(s.reads, 2);
	trace_table_check(t, 1, 1, 1, 32, false, 100 * NS + TRACE_RECHECK_NS); /* changed, but too soon */
	assert_int_equal(s.reads, 2);
	trace_table_check(t, 1, 1, 1, 32, false, 100 * NS + 1 + TRACE_RECHECK_NS);
	assert_int_equal(s.reads, 3);
	trace_table_check(t, 1, 2, 2, 32, false, 100 * NS + 2 + TRACE_RECHECK_NS); /* a new instance */
	assert_int_equal(s.reads, 4);
	/* A new second: 64 first looks, the rest deferred to a later sample. */
	for (uint32_t pid = 2; pid < 2 + 2 * TRACE_CHECKS_PER_SECOND; pid++)
		trace_table_check(t, pid, 1, 1, 0, false, 200 * NS + pid);
	assert_int_equal(s.reads, 4 + TRACE_CHECKS_PER_SECOND);
	assert_int_equal(trace_table_counters(t)->checks_deferred, TRACE_CHECKS_PER_SECOND);
	table_free(t, &s);
}

/* Links of (pid 1, start 1) with the given attrs_data: its length, and the link in out. */
static size_t link_of(struct trace_table *t, const void *attrs, size_t len, uint8_t *out, uint64_t now)
{
	struct otelprof_trace_ctx *tc = record(0xab, attrs, len);
	size_t n = trace_table_link(t, 1, 1, tc, out, now);

	free(tc);
	return n;
}

static void assert_link(const uint8_t *link, size_t len, const char *pairs, size_t pairs_len)
{
	assert_int_equal(len, AGG_LINK_IDS + pairs_len);
	for (unsigned i = 0; i < AGG_LINK_IDS; i++)
		assert_int_equal(link[i], 0xab);
	assert_memory_equal(link + AGG_LINK_IDS, pairs, pairs_len);
}

#define PAIRS(s) s, sizeof(s) - 1

static void test_link_attributes(void **state)
{
	struct source s;
	struct trace_table *t = table_new(&s, 0);
	uint8_t link[AGG_LINK_MAX];
	size_t len;

	trace_table_check(t, 1, 1, 1, 0, true, 0);
	assert_int_equal(s.reads, 1);

	/* Last occurrence wins, sorted by key id; an empty value is a value. */
	len = link_of(t, "\0\6GET /a\1\2u1\0\6GET /b", 20, link, 0);
	assert_link(link, len, PAIRS("http.route\0GET /b\0user.id\0u1\0"));
	len = link_of(t, "\1\0", 2, link, 0);
	assert_link(link, len, PAIRS("user.id\0\0"));
	assert_int_equal(trace_table_counters(t)->samples_linked, 2);

	/* A key the map does not name: ignored, counted, and the context read again (at most once a second). */
	len = link_of(t, "\7\1x\1\1y", 6, link, 5 * NS);
	assert_link(link, len, PAIRS("user.id\0y\0"));
	assert_int_equal(*counter(t, TRACE_REJECT_UNKNOWN_KEY), 1);
	assert_int_equal(s.reads, 2);
	len = link_of(t, "\7\1x", 3, link, 5 * NS + 1);
	assert_int_equal(s.reads, 2);
	assert_int_equal(*counter(t, TRACE_REJECT_UNKNOWN_KEY), 2);
	{
		static const char *const three[] = { "http.route", "user.id", "tenant" };

		source_set(&s, false, three, 3); /* the map grew: read again a second later */
		len = link_of(t, "\2\1x", 3, link, 5 * NS + 2);
		assert_int_equal(len, AGG_LINK_IDS);
		len = link_of(t, "\2\1x", 3, link, 6 * NS + 2);
		assert_link(link, len, PAIRS("tenant\0x\0"));
		assert_int_equal(s.reads, 3);
	}

	/* An incomplete entry stops the parse; what came before stays. */
	len = link_of(t, "\0\1a\1\5abc", 7, link, 0);
	assert_link(link, len, PAIRS("http.route\0a\0"));
	len = link_of(t, "\0\1a\1", 4, link, 0);
	assert_link(link, len, PAIRS("http.route\0a\0"));
	assert_int_equal(*counter(t, TRACE_REJECT_INCOMPLETE_ENTRY), 2);

	/* Values not UTF-8, or with a NUL: ignored. */
	len = link_of(t, "\0\2\xc3\x28\1\3a\0b", 9, link, 0);
	assert_int_equal(len, AGG_LINK_IDS);
	assert_int_equal(*counter(t, TRACE_REJECT_BAD_UTF8), 2);

	/* Zero ids: no span, no link. */
	{
		struct otelprof_trace_ctx *tc = record(0, "\0\1a", 3);

		assert_int_equal(trace_table_link(t, 1, 1, tc, link, 0), 0);
		free(tc);
	}
	table_free(t, &s);
}

static void test_link_malformed_records(void **state)
{
	struct source s;
	struct trace_table *t = table_new(&s, 0);
	struct otelprof_trace_ctx *tc = record(1, "\0\1a", 3);
	uint8_t link[AGG_LINK_MAX];
	uint64_t linked;

	trace_table_check(t, 1, 1, 1, 0, true, 0);
	assert_int_equal(trace_table_link(t, 2, 1, tc, link, 0), 0); /* not in the table */
	assert_int_equal(*counter(t, TRACE_REJECT_NO_PROCESS), 1);

	for (unsigned valid = 0; valid < 256; valid += 2) {
		tc->valid = (uint8_t)valid;
		assert_int_equal(trace_table_link(t, 1, 1, tc, link, 0), 0);
	}
	tc->valid = 1;
	tc->attrs_size = 2; /* copied more than claimed */
	assert_int_equal(trace_table_link(t, 1, 1, tc, link, 0), 0);
	tc->attrs_size = tc->attrs_copied = OTELPROF_TRACE_ATTRS_MAX + 1;
	assert_int_equal(trace_table_link(t, 1, 1, tc, link, 0), 0);
	assert_int_equal(*counter(t, TRACE_REJECT_RECORD_MALFORMED), 130);
	linked = trace_table_counters(t)->samples_linked;
	assert_int_equal(linked, 0);

	/* Claims more than was copied: the ids kept, the attributes dropped. */
	tc->attrs_size = 700;
	tc->attrs_copied = 3;
	assert_int_equal(trace_table_link(t, 1, 1, tc, link, 0), AGG_LINK_IDS);
	assert_int_equal(*counter(t, TRACE_REJECT_ATTRS_OVERSIZED), 1);
	free(tc);
	table_free(t, &s);
}

/* Long key names fill AGG_LINK_MAX before the record ends: the link stops there, counted. */
static void test_link_overflow(void **state)
{
	enum { KEYS = 8 };
	static const char *names[KEYS];
	char (*buf)[PROCESS_CTX_MAX_STRING + 1] = calloc(KEYS, sizeof(*buf));
	uint8_t attrs[2 * KEYS], link[AGG_LINK_MAX];
	struct source s;
	struct trace_table *t = table_new(&s, 0);
	size_t len;

	for (unsigned k = 0; k < KEYS; k++) {
		memset(buf[k], 'a' + k, PROCESS_CTX_MAX_STRING);
		names[k] = buf[k];
		attrs[2 * k] = (uint8_t)k;
		attrs[2 * k + 1] = 0;
	}
	source_set(&s, false, names, KEYS);
	trace_table_check(t, 1, 1, 1, 0, true, 0);
	len = link_of(t, attrs, sizeof(attrs), link, 0);
	assert_int_equal(len, AGG_LINK_IDS + 3 * (PROCESS_CTX_MAX_STRING + 2));
	assert_int_equal(*counter(t, TRACE_REJECT_ATTRS_OVERSIZED), 1);
	free(buf);
	table_free(t, &s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insert_lookup_forget),
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_retire_exec),
		cmocka_unit_test(test_resolve_backoff_and_map_failure),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_check_budget),
		cmocka_unit_test(test_link_attributes),
		cmocka_unit_test(test_link_malformed_records),
		cmocka_unit_test(test_link_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
