// SPDX-License-Identifier: Apache-2.0
/*
 * Export: the bounded queue; the sender's retry, backoff, give-up and shutdown rules with a
 * scripted transport; and the real gRPC and HTTP transports against the in-process test collector
 * (success, RetryInfo / Retry-After, permanent errors, partial success, garbage answers, the
 * required header, a collector that is down, slow or answering random bytes, TLS with a
 * certificate made by openssl).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "collector.h"
#include "export/export_queue.h"
#include "export/export_sender.h"
#include "export/export_transport.h"
#include "log.h"
#include "output/otlp_encode.h"
#include "profile/profile.h"
#include "../sample-record.h"

static uint8_t *bytes(size_t n)
{
	uint8_t *p = malloc(n);

	memset(p, 0xab, n);
	return p;
}

static void test_queue(void **state)
{
	struct export_queue q;
	struct export_item it;

	(void)state;
	assert_int_equal(export_queue_init(&q, 3, 100), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(export_queue_push(&q, (struct export_item){ bytes(10), 10, 1 }), 0);
	assert_int_equal(q.count, 3);
	assert_int_equal(q.dropped, 2);
	assert_int_equal(q.dropped_samples, 2);
	/* By bytes: 60 + 30 + 30 > 100 drops the oldest until it fits. */
	assert_int_equal(export_queue_push(&q, (struct export_item){ bytes(60), 60, 1 }), 0);
	assert_int_equal(q.bytes, 80);
	assert_int_equal(export_queue_push(&q, (struct export_item){ bytes(30), 30, 1 }), 0);
	assert_true(q.bytes <= 100);
	assert_int_equal(export_queue_push(&q, (struct export_item){ bytes(101), 101, 7 }), -E2BIG);
	assert_int_equal(q.dropped_samples, 4 + 7);
	assert_true(export_queue_pop(&q, &it));
	free(it.data);
	export_queue_destroy(&q);
}

/* A transport that answers from a script; the last entry repeats. */
struct fake {
	struct export_transport base;
	pthread_mutex_t lock;
	struct export_result script[8];
	unsigned nscript, calls;
	uint64_t call_ns[64];
	unsigned delay_ms;
};

static int fake_send(struct export_transport *t, const uint8_t *data, size_t len, uint64_t timeout_ns,
		     struct export_result *res)
{
	struct fake *f = (struct fake *)t;
	unsigned i;

	(void)data;
	(void)len;
	(void)timeout_ns;
	if (f->delay_ms)
		usleep(f->delay_ms * 1000);
	pthread_mutex_lock(&f->lock);
	i = f->calls < f->nscript ? f->calls : f->nscript - 1;
	if (f->calls < 64)
		f->call_ns[f->calls] = clock_ns(CLOCK_MONOTONIC);
	f->calls++;
	*res = f->script[i];
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static void fake_free(struct export_transport *t)
{
	(void)t; /* owned by the test */
}

static struct fake *fake_new(unsigned n, const struct export_result *script)
{
	struct fake *f = calloc(1, sizeof(*f));

	f->base = (struct export_transport){ .send = fake_send, .free = fake_free, .name = "fake" };
	pthread_mutex_init(&f->lock, NULL);
	memcpy(f->script, script, n * sizeof(*script));
	f->nscript = n;
	return f;
}

static const struct exporter_config fast = {
	.queue_size = 4, .queue_bytes = 1 << 20, .timeout_ns = 1000000000ULL,
	.initial_backoff_ns = 10000000ULL, .max_backoff_ns = 40000000ULL, .max_elapsed_ns = 2000000000ULL,
};

static struct exporter_stats run(struct fake *f, const struct exporter_config *cfg, unsigned requests,
				 uint64_t shutdown_after_ns)
{
	struct exporter *e = exporter_new(&f->base, cfg);
	struct exporter_stats st;

	assert_non_null(e);
	for (unsigned i = 0; i < requests; i++)
		exporter_enqueue(e, bytes(100), 100, 10);
	exporter_shutdown(e, clock_ns(CLOCK_MONOTONIC) + shutdown_after_ns);
	exporter_report(e);
	exporter_get_stats(e, &st);
	exporter_free(e);
	return st;
}

static void test_retry_then_ok(void **state)
{
	struct fake *f = fake_new(3, (struct export_result[]){
		{ .outcome = EXPORT_RETRYABLE, .message = "down" }, { .outcome = EXPORT_RETRYABLE }, { .outcome = EXPORT_OK } });
	struct exporter_stats st = run(f, &fast, 1, 5000000000ULL);

	(void)state;
	assert_int_equal(st.sent, 1);
	assert_int_equal(st.retries, 2);
	assert_int_equal(st.samples_sent, 10);
	assert_int_equal(st.dropped_samples, 0);
	/* Backoff between attempts: at least half the initial delay, then growing. */
	assert_true(f->call_ns[1] - f->call_ns[0] >= 5000000ULL);
	assert_true(f->call_ns[2] - f->call_ns[1] >= 10000000ULL);
	free(f);
}

static void test_server_delay_wins(void **state)
{
	struct fake *f = fake_new(2, (struct export_result[]){
		{ .outcome = EXPORT_RETRYABLE, .retry_after_ns = 300000000ULL }, { .outcome = EXPORT_OK } });
	struct exporter_stats st = run(f, &fast, 1, 5000000000ULL);

	(void)state;
	assert_int_equal(st.sent, 1);
	assert_true(f->call_ns[1] - f->call_ns[0] >= 300000000ULL);
	free(f);
}

static void test_permanent_and_partial(void **state)
{
	struct fake *f = fake_new(3, (struct export_result[]){
		{ .outcome = EXPORT_PERMANENT, .code = 3, .message = "bad" },
		{ .outcome = EXPORT_OK, .rejected = 2, .message = "two rejected" }, { .outcome = EXPORT_OK } });
	struct exporter_stats st = run(f, &fast, 3, 5000000000ULL);

	(void)state;
	assert_int_equal(f->calls, 3);
	assert_int_equal(st.dropped_permanent, 1);
	assert_int_equal(st.sent, 2);
	assert_int_equal(st.rejected_profiles, 2);
	assert_int_equal(st.retries, 0);
	free(f);
}

static void test_give_up(void **state)
{
	struct exporter_config cfg = fast;
	struct fake *f = fake_new(1, (struct export_result[]){ { .outcome = EXPORT_RETRYABLE, .message = "down" } });
	struct exporter_stats st;

	(void)state;
	cfg.max_elapsed_ns = 200000000ULL;
	st = run(f, &cfg, 1, 5000000000ULL);
	assert_int_equal(st.sent, 0);
	assert_int_equal(st.dropped_retries, 1);
	assert_int_equal(st.dropped_samples, 10);
	assert_true(f->calls >= 3);
	free(f);
}

static void test_queue_full_while_sending(void **state)
{
	struct fake *f = fake_new(1, (struct export_result[]){ { .outcome = EXPORT_OK } });
	struct exporter_config cfg = fast;
	struct exporter_stats st;

	(void)state;
	f->delay_ms = 100;
	cfg.queue_size = 2;
	st = run(f, &cfg, 10, 5000000000ULL);
	assert_true(st.dropped_queue_full >= 6);
	assert_int_equal(st.sent + st.dropped_queue_full, 10);
	assert_int_equal(st.dropped_samples, st.dropped_queue_full * 10);
	free(f);
}

static void test_shutdown_deadline(void **state)
{
	struct fake *f = fake_new(1, (struct export_result[]){ { .outcome = EXPORT_RETRYABLE } });
	struct exporter_config cfg = fast;
	uint64_t start = clock_ns(CLOCK_MONOTONIC);
	struct exporter_stats st;

	(void)state;
	cfg.initial_backoff_ns = cfg.max_backoff_ns = 1000000000ULL; /* sleeps longer than the deadline */
	cfg.max_elapsed_ns = 60000000000ULL;
	st = run(f, &cfg, 3, 300000000ULL);
	assert_true(clock_ns(CLOCK_MONOTONIC) - start < 2000000000ULL);
	assert_int_equal(st.sent, 0);
	assert_int_equal(st.dropped_shutdown, 3);
	assert_int_equal(st.dropped_samples, 30);
	free(f);
}

/* ---- the real transports against the test collector ---- */

static uint8_t *request;
static size_t request_len;
static char tmpdir[] = "/tmp/test-export-XXXXXX";

void hot_fn(void);
void __attribute__((noinline)) hot_fn(void) { __asm__ volatile(""); }

static int group_setup(void **state)
{
	struct agg_limits limits = { 1000, 1 << 20, 1000 };
	struct aggregate *agg = aggregate_new(&limits);
	struct symbolizer *sym = symbolizer_new(NULL);
	struct otelprof_sample s;
	struct otlp_encode_options o = { 0 };
	struct otlp_batch batch;
	struct profile *p;
	char cmd[1024];

	(void)state;
	log_set_level(LOG_LEVEL_ERROR);
	s = sample_record((uint32_t)getpid(), (uint32_t)getpid(), 0, "test", "test");
	s.user_depth = 1;
	s.user_ips[0] = (uint64_t)(uintptr_t)&hot_fn;
	for (uint64_t t = 1; t <= 5; t++)
		aggregate_add(agg, &s, t * 1000);
	p = profile_build(agg, sym, &(struct profile_build_options){ .frequency = 99, .time_unix_ns = 1, .duration_ns = 10000 });
	if (!p || otlp_encode(p, &o, &batch) || batch.nmessages != 1)
		return -1;
	request = batch.messages[0].data;
	request_len = batch.messages[0].len;
	batch.messages[0].data = NULL;
	otlp_batch_free(&batch);
	profile_free(p);
	symbolizer_free(sym);
	aggregate_free(agg);

	/* A certificate for 127.0.0.1, and a client CA with a client certificate, made here with openssl. */
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "cd %s && exec >/dev/null 2>&1 && "
		 "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost "
		 "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout key.pem -out cert.pem && "
		 "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=client-ca -keyout client-ca-key.pem "
		 "-out client-ca.pem && "
		 "openssl req -newkey rsa:2048 -nodes -subj /CN=otelprofd -keyout client-key.pem -out client.csr && "
		 "openssl x509 -req -in client.csr -CA client-ca.pem -CAkey client-ca-key.pem -CAcreateserial "
		 "-days 2 -out client.pem", tmpdir);
	return system(cmd) ? -1 : 0;
}

static int group_teardown(void **state)
{
	char cmd[256];

	(void)state;
	free(request);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) ? -1 : 0;
}

static const char *real_getenv(const char *name)
{
	return getenv(name);
}

/* A transport to 127.0.0.1:port configured from base (protocol, headers, TLS files, compression). */
static struct export_transport *transport_from(const struct export_config *base, int port, struct export_config *cfg)
{
	char endpoint[64], err[256];
	struct export_transport *t;
	enum export_protocol proto = base->protocol;
	int e = 0;

	*cfg = *base;
	snprintf(endpoint, sizeof(endpoint), "127.0.0.1:%d", port);
	cfg->endpoint = endpoint;
	assert_int_equal(otel_env_apply(cfg, real_getenv, stderr), 0);
	cfg->endpoint = NULL;
	t = proto == EXPORT_PROTOCOL_GRPC ? export_grpc_new(cfg, &e, err, sizeof(err)) : export_http_new(cfg, &e, err, sizeof(err));
	if (!t)
		fail_msg("transport: %s", err);
	return t;
}

static struct export_transport *transport(enum export_protocol proto, int port, const char *headers, bool tls,
					  const char *ca, struct export_config *cfg)
{
	return transport_from(&(struct export_config){ .protocol = proto, .headers_text = headers, .ca_file = ca,
						       .insecure = tls ? EXPORT_NO : EXPORT_YES },
			      port, cfg);
}

static void send_expect(struct export_transport *t, enum export_outcome outcome, struct export_result *res)
{
	/* A collector that is not there costs the whole timeout (gRPC calls wait for the connection). */
	t->send(t, request, request_len, outcome == EXPORT_RETRYABLE ? 1000000000ULL : 5000000000ULL, res);
	if (res->outcome != outcome)
		fail_msg("outcome %d (expected %d): %s", res->outcome, outcome, res->message);
}

/* One request on a fresh transport configured from base, with the outcome expected. */
static void send_once(const struct export_config *base, int port, enum export_outcome outcome)
{
	struct export_config cfg;
	struct export_transport *t = transport_from(base, port, &cfg);
	struct export_result res;

	send_expect(t, outcome, &res);
	t->free(t);
	export_config_free(&cfg);
}

static void transport_behaviours(enum export_protocol proto)
{
	struct collector *c = collector_start(&(struct collector_config){
		.grpc_port = proto == EXPORT_PROTOCOL_GRPC ? 0 : -1, .http_port = proto == EXPORT_PROTOCOL_HTTP ? 0 : -1,
		.require_header = "x-token=s3cret" });
	int port;
	struct export_config cfg;
	struct export_transport *t, *no_header;
	struct export_result res;
	struct collector_stats st;

	assert_non_null(c);
	port = proto == EXPORT_PROTOCOL_GRPC ? collector_grpc_port(c) : collector_http_port(c);
	t = transport(proto, port, "X-Token=s3cret", false, NULL, &cfg);
	send_expect(t, EXPORT_OK, &res);
	assert_int_equal(res.rejected, 0);

	collector_set_behaviour(c, COLLECTOR_UNAVAILABLE, 1, 1500);
	send_expect(t, EXPORT_RETRYABLE, &res);
	/* RetryInfo 1.5 s; Retry-After has whole seconds: 2 s. */
	assert_int_equal(res.retry_after_ns, proto == EXPORT_PROTOCOL_GRPC ? 1500000000ULL : 2000000000ULL);
	collector_set_behaviour(c, COLLECTOR_EXHAUSTED, 1, 0);
	/* gRPC RESOURCE_EXHAUSTED without RetryInfo is permanent; HTTP 429 is retryable. */
	send_expect(t, proto == EXPORT_PROTOCOL_GRPC ? EXPORT_PERMANENT : EXPORT_RETRYABLE, &res);
	collector_set_behaviour(c, COLLECTOR_PERMANENT, 1, 0);
	send_expect(t, EXPORT_PERMANENT, &res);
	assert_non_null(strstr(res.message, "test collector says no"));
	collector_set_behaviour(c, COLLECTOR_PARTIAL, 1, 0);
	send_expect(t, EXPORT_OK, &res);
	assert_int_equal(res.rejected, 1);
	assert_string_equal(res.message, "test rejection");
	collector_set_behaviour(c, COLLECTOR_GARBAGE, 1, 0);
	send_expect(t, EXPORT_OK, &res);
	assert_non_null(strstr(res.message, "undecodable"));
	t->free(t);
	export_config_free(&cfg);

	no_header = transport(proto, port, NULL, false, NULL, &cfg);
	send_expect(no_header, EXPORT_PERMANENT, &res);
	no_header->free(no_header);
	export_config_free(&cfg);

	collector_get_stats(c, &st);
	assert_int_equal(st.requests, 7);
	assert_int_equal(st.valid, 6);
	assert_int_equal(st.invalid, 0);
	assert_int_equal(st.unauthenticated, 1);
	if (proto == EXPORT_PROTOCOL_HTTP)
		assert_int_equal(st.http_gzip, 7);
	collector_stop(c);

	/* Nobody listening: retryable. */
	t = transport(proto, port, NULL, false, NULL, &cfg);
	send_expect(t, EXPORT_RETRYABLE, &res);
	t->free(t);
	export_config_free(&cfg);
}

static void test_grpc_transport(void **state)
{
	(void)state;
	transport_behaviours(EXPORT_PROTOCOL_GRPC);
}

static void test_http_transport(void **state)
{
	(void)state;
	transport_behaviours(EXPORT_PROTOCOL_HTTP);
}

/*
 * Bad peers: an answer later than the timeout, and a port that answers random bytes instead of
 * HTTP/2 or HTTP: both retryable (the request was not accepted), never a crash or a hang.
 */
static void bad_peers(enum export_protocol proto)
{
	struct collector_config cc = { .grpc_port = proto == EXPORT_PROTOCOL_GRPC ? 0 : -1,
				       .http_port = proto == EXPORT_PROTOCOL_HTTP ? 0 : -1 };
	struct collector *c = collector_start(&cc);
	struct export_transport *t;
	struct export_config cfg;
	struct export_result res;
	struct collector_stats st;

	assert_non_null(c);
	t = transport(proto, proto == EXPORT_PROTOCOL_GRPC ? collector_grpc_port(c) : collector_http_port(c), NULL,
		      false, NULL, &cfg);
	collector_set_behaviour(c, COLLECTOR_SLOW, 1, 3000);
	send_expect(t, EXPORT_RETRYABLE, &res);
	t->free(t);
	export_config_free(&cfg);
	collector_get_stats(c, &st);
	assert_int_equal(st.slow, 1);
	collector_stop(c);

	cc.raw_garbage = true;
	c = collector_start(&cc);
	assert_non_null(c);
	t = transport(proto, proto == EXPORT_PROTOCOL_GRPC ? collector_grpc_port(c) : collector_http_port(c), NULL,
		      false, NULL, &cfg);
	for (int i = 0; i < 3; i++)
		send_expect(t, EXPORT_RETRYABLE, &res);
	t->free(t);
	export_config_free(&cfg);
	collector_get_stats(c, &st);
	assert_true(st.garbage_connections >= 1);
	assert_int_equal(st.requests, 0);
	collector_stop(c);
}

static void test_bad_peers_grpc(void **state)
{
	(void)state;
	bad_peers(EXPORT_PROTOCOL_GRPC);
}

static void test_bad_peers_http(void **state)
{
	(void)state;
	bad_peers(EXPORT_PROTOCOL_HTTP);
}

/*
 * The sheet's retry classification, code by code: the pure classifiers over every gRPC code (with
 * and without RetryInfo) and the HTTP statuses, then each case answered by the test collector
 * through the real transport (the status, RetryInfo and Retry-After reach the exporter).
 */
static const struct {
	int code;
	bool retry_info;
	unsigned retry_ms;
	enum export_outcome outcome;
} grpc_cases[] = {
	{ 1, false, 0, EXPORT_RETRYABLE },   /* CANCELLED */
	{ 2, false, 0, EXPORT_PERMANENT },   /* UNKNOWN */
	{ 3, false, 0, EXPORT_PERMANENT },   /* INVALID_ARGUMENT */
	{ 4, false, 0, EXPORT_RETRYABLE },   /* DEADLINE_EXCEEDED */
	{ 5, false, 0, EXPORT_PERMANENT },   /* NOT_FOUND */
	{ 6, false, 0, EXPORT_PERMANENT },   /* ALREADY_EXISTS */
	{ 7, false, 0, EXPORT_PERMANENT },   /* PERMISSION_DENIED */
	{ 8, false, 0, EXPORT_PERMANENT },   /* RESOURCE_EXHAUSTED without RetryInfo */
	{ 8, true, 0, EXPORT_RETRYABLE },    /* ... with a RetryInfo of zero delay: still RetryInfo */
	{ 8, true, 1500, EXPORT_RETRYABLE }, /* ... with a delay */
	{ 9, false, 0, EXPORT_PERMANENT },   /* FAILED_PRECONDITION */
	{ 10, false, 0, EXPORT_RETRYABLE },  /* ABORTED */
	{ 11, false, 0, EXPORT_RETRYABLE },  /* OUT_OF_RANGE */
	{ 12, false, 0, EXPORT_PERMANENT },  /* UNIMPLEMENTED */
	{ 13, false, 0, EXPORT_PERMANENT },  /* INTERNAL */
	{ 14, false, 0, EXPORT_RETRYABLE },  /* UNAVAILABLE */
	{ 14, true, 2000, EXPORT_RETRYABLE },
	{ 15, false, 0, EXPORT_RETRYABLE },  /* DATA_LOSS */
	{ 16, false, 0, EXPORT_PERMANENT },  /* UNAUTHENTICATED */
	{ 16, true, 1000, EXPORT_PERMANENT }, /* RetryInfo does not make a permanent code retryable */
};

static const struct {
	int status;
	bool retry_after;
	unsigned retry_ms;
	enum export_outcome outcome;
} http_cases[] = {
	{ 400, false, 0, EXPORT_PERMANENT }, { 401, false, 0, EXPORT_PERMANENT }, { 403, false, 0, EXPORT_PERMANENT },
	{ 404, false, 0, EXPORT_PERMANENT }, { 408, false, 0, EXPORT_PERMANENT }, { 413, false, 0, EXPORT_PERMANENT },
	{ 429, false, 0, EXPORT_RETRYABLE }, { 429, true, 3000, EXPORT_RETRYABLE },
	{ 500, false, 0, EXPORT_PERMANENT }, { 501, false, 0, EXPORT_PERMANENT },
	{ 502, true, 2000, EXPORT_RETRYABLE }, { 503, false, 0, EXPORT_RETRYABLE }, { 503, true, 1000, EXPORT_RETRYABLE },
	{ 504, true, 4000, EXPORT_RETRYABLE }, { 505, false, 0, EXPORT_PERMANENT },
	{ 503, true, 0, EXPORT_RETRYABLE },  /* Retry-After: 0 */
	{ 400, true, 5000, EXPORT_PERMANENT }, /* Retry-After does not make a permanent status retryable */
};

static void test_classify_tables(void **state)
{
	(void)state;
	assert_int_equal(export_grpc_classify(0, false), EXPORT_OK);
	for (size_t i = 0; i < sizeof(grpc_cases) / sizeof(grpc_cases[0]); i++)
		if (export_grpc_classify(grpc_cases[i].code, grpc_cases[i].retry_info) != grpc_cases[i].outcome)
			fail_msg("gRPC code %d (RetryInfo %d)", grpc_cases[i].code, grpc_cases[i].retry_info);
	/* Every code: retryable exactly as the sheet lists, RetryInfo matters only for 8. */
	for (int code = 1; code <= 16; code++) {
		bool retryable = code == 1 || code == 4 || code == 10 || code == 11 || code == 14 || code == 15;

		assert_int_equal(export_grpc_classify(code, false), retryable ? EXPORT_RETRYABLE : EXPORT_PERMANENT);
		assert_int_equal(export_grpc_classify(code, true),
				 retryable || code == 8 ? EXPORT_RETRYABLE : EXPORT_PERMANENT);
	}
	for (long st = 100; st < 600; st++) {
		enum export_outcome want = st >= 200 && st < 300 ? EXPORT_OK
					   : st == 429 || st == 502 || st == 503 || st == 504 ? EXPORT_RETRYABLE
											   : EXPORT_PERMANENT;

		assert_int_equal(export_http_classify(st), want);
	}
}

static void test_classify_grpc_wire(void **state)
{
	struct collector *c = collector_start(&(struct collector_config){ .grpc_port = 0, .http_port = -1 });
	struct export_transport *t;
	struct export_config cfg;
	struct export_result res;

	(void)state;
	assert_non_null(c);
	t = transport(EXPORT_PROTOCOL_GRPC, collector_grpc_port(c), NULL, false, NULL, &cfg);
	for (size_t i = 0; i < sizeof(grpc_cases) / sizeof(grpc_cases[0]); i++) {
		collector_set_status(c, grpc_cases[i].code, grpc_cases[i].retry_info, grpc_cases[i].retry_ms);
		t->send(t, request, request_len, 5000000000ULL, &res);
		if (res.outcome != grpc_cases[i].outcome || res.code != grpc_cases[i].code ||
		    res.retry_after_ns != grpc_cases[i].retry_ms * 1000000ULL)
			fail_msg("gRPC code %d (RetryInfo %d, %u ms): outcome %d, code %d, retry %llu ns: %s",
				 grpc_cases[i].code, grpc_cases[i].retry_info, grpc_cases[i].retry_ms, res.outcome, res.code,
				 (unsigned long long)res.retry_after_ns, res.message);
	}
	t->free(t);
	export_config_free(&cfg);
	collector_stop(c);
}

static void test_classify_http_wire(void **state)
{
	struct collector *c = collector_start(&(struct collector_config){ .grpc_port = -1, .http_port = 0 });
	struct export_transport *t;
	struct export_config cfg;
	struct export_result res;

	(void)state;
	assert_non_null(c);
	t = transport(EXPORT_PROTOCOL_HTTP, collector_http_port(c), NULL, false, NULL, &cfg);
	for (size_t i = 0; i < sizeof(http_cases) / sizeof(http_cases[0]); i++) {
		collector_set_status(c, http_cases[i].status, http_cases[i].retry_after, http_cases[i].retry_ms);
		t->send(t, request, request_len, 5000000000ULL, &res);
		if (res.outcome != http_cases[i].outcome || res.code != http_cases[i].status ||
		    res.retry_after_ns != http_cases[i].retry_ms * 1000000ULL)
			fail_msg("HTTP %d (Retry-After %d, %u ms): outcome %d, code %d, retry %llu ns: %s",
				 http_cases[i].status, http_cases[i].retry_after, http_cases[i].retry_ms, res.outcome,
				 res.code, (unsigned long long)res.retry_after_ns, res.message);
	}
	t->free(t);
	export_config_free(&cfg);
	collector_stop(c);
}

static void test_grpc_tls(void **state)
{
	char cert[300], key[300];
	struct collector *c;

	(void)state;
	snprintf(cert, sizeof(cert), "%s/cert.pem", tmpdir);
	snprintf(key, sizeof(key), "%s/key.pem", tmpdir);
	c = collector_start(&(struct collector_config){ .grpc_port = 0, .http_port = -1, .cert_file = cert,
							.key_file = key, .require_header = "x-token=t" });
	assert_non_null(c);
	send_once(&(struct export_config){ .protocol = EXPORT_PROTOCOL_GRPC, .headers_text = "x-token=t",
					   .ca_file = cert, .insecure = EXPORT_NO },
		  collector_grpc_port(c), EXPORT_OK);
	/* Plain text to a TLS server fails, and is worth retrying (it may be a restart). */
	send_once(&(struct export_config){ .protocol = EXPORT_PROTOCOL_GRPC, .headers_text = "x-token=t",
					   .insecure = EXPORT_YES },
		  collector_grpc_port(c), EXPORT_RETRYABLE);
	collector_stop(c);
}

/* Mutual TLS: a collector that requires a client certificate takes ours and refuses no certificate. */
static void test_grpc_mtls(void **state)
{
	char cert[300], key[300], client_ca[300], client_cert[300], client_key[300];
	struct collector_stats st;
	struct collector *c;

	(void)state;
	snprintf(cert, sizeof(cert), "%s/cert.pem", tmpdir);
	snprintf(key, sizeof(key), "%s/key.pem", tmpdir);
	snprintf(client_ca, sizeof(client_ca), "%s/client-ca.pem", tmpdir);
	snprintf(client_cert, sizeof(client_cert), "%s/client.pem", tmpdir);
	snprintf(client_key, sizeof(client_key), "%s/client-key.pem", tmpdir);
	c = collector_start(&(struct collector_config){ .grpc_port = 0, .http_port = -1, .cert_file = cert,
							.key_file = key, .client_ca_file = client_ca,
							.require_client_cert = true });
	assert_non_null(c);
	send_once(&(struct export_config){ .protocol = EXPORT_PROTOCOL_GRPC, .insecure = EXPORT_NO, .ca_file = cert,
					   .client_cert = client_cert, .client_key = client_key },
		  collector_grpc_port(c), EXPORT_OK);
	/* Without a client certificate the handshake fails: no request reaches the collector. */
	send_once(&(struct export_config){ .protocol = EXPORT_PROTOCOL_GRPC, .insecure = EXPORT_NO, .ca_file = cert },
		  collector_grpc_port(c), EXPORT_RETRYABLE);
	collector_get_stats(c, &st);
	assert_int_equal(st.requests, 1);
	collector_stop(c);
}

/* The collector's own checks: gRPC requests on the sheet's method, gzip-compressed unless told not. */
static void test_grpc_gzip_and_method(void **state)
{
	struct collector *c = collector_start(&(struct collector_config){ .grpc_port = 0, .http_port = -1,
									  .expect_gzip = true });
	struct collector_stats st;

	(void)state;
	assert_non_null(c);
	send_once(&(struct export_config){ .protocol = EXPORT_PROTOCOL_GRPC, .insecure = EXPORT_YES },
		  collector_grpc_port(c), EXPORT_OK);
	collector_get_stats(c, &st);
	assert_int_equal(st.not_gzip, 0);
	assert_int_equal(st.wrong_method, 0);
	assert_int_equal(st.valid, 1);

	send_once(&(struct export_config){ .protocol = EXPORT_PROTOCOL_GRPC, .insecure = EXPORT_YES,
					   .compression = EXPORT_COMPRESSION_NONE },
		  collector_grpc_port(c), EXPORT_OK);
	collector_get_stats(c, &st);
	assert_int_equal(st.not_gzip, 1);
	assert_int_equal(st.valid, 2);
	collector_stop(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue),
		cmocka_unit_test(test_retry_then_ok),
		cmocka_unit_test(test_server_delay_wins),
		cmocka_unit_test(test_permanent_and_partial),
		cmocka_unit_test(test_give_up),
		cmocka_unit_test(test_queue_full_while_sending),
		cmocka_unit_test(test_shutdown_deadline),
		cmocka_unit_test(test_grpc_transport),
		cmocka_unit_test(test_http_transport),
		cmocka_unit_test(test_grpc_tls),
		cmocka_unit_test(test_bad_peers_grpc),
		cmocka_unit_test(test_bad_peers_http),
		cmocka_unit_test(test_classify_tables),
		cmocka_unit_test(test_classify_grpc_wire),
		cmocka_unit_test(test_classify_http_wire),
		cmocka_unit_test(test_grpc_mtls),
		cmocka_unit_test(test_grpc_gzip_and_method),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
