// SPDX-License-Identifier: Apache-2.0
#include "collector.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>

#include "export/export_transport.h" /* export_read_file */
#include "otlp_check.h"
#include "otlp_profiles_service.pb-c.h"
#include "otlp_rpc_status.pb-c.h"

#define TAG_NEW_CALL ((void *)1)
#define TAG_BATCH ((void *)2)
#define TAG_SHUTDOWN ((void *)3)
#define MAX_HEADER_BYTES (64u << 10)
#define MAX_BODY_BYTES (128u << 20)
#define EXPORT_METHOD "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"

/* A TCP listener on 127.0.0.1 with its own thread. */
struct listener {
	struct collector *c;
	int fd;
	pthread_t thread;
};

struct collector {
	struct collector_config cfg;
	char header_key[128], header_value[256];

	grpc_server *server;
	grpc_completion_queue *cq;
	bool grpc_started;
	pthread_t grpc_thread;
	int grpc_port;

	struct listener http, garbage_grpc; /* the HTTP receiver (or raw garbage), raw garbage for gRPC */
	int http_port;

	pthread_mutex_t lock;
	volatile bool stopping;
	enum collector_behaviour behaviour;
	unsigned behaviour_left, retry_ms, saved;
	int status_code;          /* COLLECTOR_STATUS */
	bool status_retry_info;
	struct collector_stats stats;
};

static uint8_t *gunzip(const uint8_t *data, size_t len, size_t *out_len);

/* What to answer to one request. */
struct decision {
	enum collector_behaviour behaviour;
	bool unauthenticated;
	unsigned retry_ms;
	int code;                 /* COLLECTOR_STATUS */
	bool retry_info;
};

/* Count, validate and save a request; decide the answer. */
static struct decision handle(struct collector *c, const char *transport, const uint8_t *data, size_t len,
			      bool header_ok)
{
	OtlpRequest *req = otlp_check_decode(data, len);
	struct decision d = { .behaviour = COLLECTOR_OK };
	char why[256] = "undecodable request";
	unsigned errors = req ? otlp_check_validate(req, why, sizeof(why)) : 1;

	pthread_mutex_lock(&c->lock);
	c->stats.requests++;
	if (!strcmp(transport, "grpc"))
		c->stats.grpc_requests++;
	else
		c->stats.http_requests++;
	if (!header_ok) {
		c->stats.unauthenticated++;
		d.unauthenticated = true;
		pthread_mutex_unlock(&c->lock);
		otlp_check_free(req);
		return d;
	}
	if (errors) {
		c->stats.invalid++;
		snprintf(c->stats.last_error, sizeof(c->stats.last_error), "%s", why);
		fprintf(stderr, "test-collector: invalid %s request: %s\n", transport, why);
	} else {
		c->stats.valid++;
	}
	if (c->behaviour != COLLECTOR_OK) {
		d.behaviour = c->behaviour;
		d.retry_ms = c->retry_ms;
		d.code = c->status_code;
		d.retry_info = c->status_retry_info;
		if (c->behaviour_left && !--c->behaviour_left)
			c->behaviour = COLLECTOR_OK;
	}
	if (d.behaviour == COLLECTOR_SLOW)
		c->stats.slow++;
	if (d.behaviour == COLLECTOR_OK || d.behaviour == COLLECTOR_PARTIAL || d.behaviour == COLLECTOR_GARBAGE ||
	    d.behaviour == COLLECTOR_SLOW) {
		c->stats.accepted++;
		c->stats.samples += req ? otlp_check_samples(req) : 0;
		if (c->cfg.out_dir && !errors) {
			char path[4096];
			FILE *f;

			snprintf(path, sizeof(path), "%s/%04u-%s.pb", c->cfg.out_dir, ++c->saved, transport);
			f = fopen(path, "we");
			if (f) {
				fwrite(data, 1, len, f);
				fclose(f);
			}
		}
	}
	pthread_mutex_unlock(&c->lock);
	otlp_check_free(req);
	return d;
}

/* COLLECTOR_SLOW: wait ms before answering (shorter when the collector stops). */
static void slow_down(struct collector *c, unsigned ms)
{
	for (unsigned waited = 0; waited < ms && !c->stopping; waited += 50)
		usleep(50 * 1000);
}

/* The serialized ExportProfilesServiceResponse for an accepted request. */
static size_t response_body(enum collector_behaviour b, uint8_t *buf, size_t size)
{
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse r =
		OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_RESPONSE__INIT;
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesPartialSuccess ps =
		OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_PARTIAL_SUCCESS__INIT;

	if (b == COLLECTOR_GARBAGE) {
		memset(buf, 0xff, 16);
		return 16;
	}
	if (b == COLLECTOR_PARTIAL) {
		ps.rejected_profiles = 1;
		ps.error_message = (char *)"test rejection";
		r.partial_success = &ps;
	}
	if (opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__get_packed_size(&r) > size)
		return 0;
	return opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__pack(&r, buf);
}

/* google.rpc.Status with a RetryInfo detail, serialized (the grpc-status-details-bin trailer). */
static size_t retry_status(int code, unsigned retry_ms, uint8_t *buf, size_t size)
{
	Google__Rpc__RetryDuration delay = GOOGLE__RPC__RETRY_DURATION__INIT;
	Google__Rpc__RetryInfo info = GOOGLE__RPC__RETRY_INFO__INIT;
	Google__Rpc__StatusAny any = GOOGLE__RPC__STATUS_ANY__INIT, *anys[1] = { &any };
	Google__Rpc__Status st = GOOGLE__RPC__STATUS__INIT;
	uint8_t packed[64];

	delay.seconds = retry_ms / 1000;
	delay.nanos = (int32_t)(retry_ms % 1000) * 1000000;
	info.retry_delay = &delay;
	any.type_url = (char *)"type.googleapis.com/google.rpc.RetryInfo";
	any.value.data = packed;
	any.value.len = google__rpc__retry_info__pack(&info, packed);
	st.code = code;
	st.message = (char *)"test collector: try later";
	st.details = anys;
	st.n_details = 1;
	if (google__rpc__status__get_packed_size(&st) > size)
		return 0;
	return google__rpc__status__pack(&st, buf);
}

/* ---- gRPC ---- */

static bool grpc_wait(struct collector *c, void *tag, bool *shutdown_seen)
{
	for (;;) {
		grpc_event ev = grpc_completion_queue_next(c->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			return false;
		if (ev.tag == TAG_SHUTDOWN) {
			*shutdown_seen = true;
			continue;
		}
		if (ev.tag == tag)
			return ev.success;
	}
}

static bool metadata_has(const grpc_metadata_array *md, const char *key, const char *value)
{
	for (size_t i = 0; i < md->count; i++) {
		grpc_slice k = md->metadata[i].key, v = md->metadata[i].value;

		if (GRPC_SLICE_LENGTH(k) == strlen(key) && !memcmp(GRPC_SLICE_START_PTR(k), key, strlen(key)) &&
		    GRPC_SLICE_LENGTH(v) == strlen(value) && !memcmp(GRPC_SLICE_START_PTR(v), value, strlen(value)))
			return true;
	}
	return false;
}

static bool slice_is(grpc_slice s, const char *text)
{
	return GRPC_SLICE_LENGTH(s) == strlen(text) && !memcmp(GRPC_SLICE_START_PTR(s), text, strlen(text));
}

static void serve_grpc_call(struct collector *c, grpc_call *call, const grpc_call_details *call_details,
			    const grpc_metadata_array *md, bool *shutdown_seen)
{
	grpc_byte_buffer *request = NULL, *response = NULL;
	grpc_op ops[3];
	grpc_slice body = grpc_empty_slice(), details = grpc_empty_slice(), resp_slice;
	grpc_metadata trailer;
	grpc_status_code status = GRPC_STATUS_OK;
	struct decision d;
	uint8_t buf[256];
	size_t n;
	int cancelled = 0;
	bool has_trailer = false, gzipped = false, right_method = slice_is(call_details->method, EXPORT_METHOD);

	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_RECV_MESSAGE;
	ops[1].data.recv_message.recv_message = &request;
	if (grpc_call_start_batch(call, ops, 2, TAG_BATCH, NULL) != GRPC_CALL_OK || !grpc_wait(c, TAG_BATCH, shutdown_seen))
		return;
	if (request) {
		grpc_byte_buffer_reader reader;

		/* Per-message decompression is off on this server: a gzip request arrives as it was
		 * sent, marked gzip (libgrpc 1.51's reader then hands the gzip bytes out as they are). */
		gzipped = request->type == GRPC_BB_RAW && request->data.raw.compression == GRPC_COMPRESS_GZIP;
		if (grpc_byte_buffer_reader_init(&reader, request)) {
			body = grpc_byte_buffer_reader_readall(&reader);
			grpc_byte_buffer_reader_destroy(&reader);
		}
		grpc_byte_buffer_destroy(request);
		if (gzipped && GRPC_SLICE_LENGTH(body) >= 2 && GRPC_SLICE_START_PTR(body)[0] == 0x1f &&
		    GRPC_SLICE_START_PTR(body)[1] == 0x8b) {
			size_t plain_len = 0;
			uint8_t *plain = gunzip(GRPC_SLICE_START_PTR(body), GRPC_SLICE_LENGTH(body), &plain_len);

			/* Broken gzip stays as it came: undecodable, counted invalid. */
			if (plain) {
				grpc_slice_unref(body);
				body = grpc_slice_from_copied_buffer((const char *)plain, plain_len);
				free(plain);
			}
		}
	}
	pthread_mutex_lock(&c->lock);
	c->stats.wrong_method += !right_method;
	c->stats.not_gzip += c->cfg.expect_gzip && right_method && !gzipped;
	pthread_mutex_unlock(&c->lock);
	if (!right_method) {
		char method[256];

		snprintf(method, sizeof(method), "%.*s", (int)GRPC_SLICE_LENGTH(call_details->method),
			 (const char *)GRPC_SLICE_START_PTR(call_details->method));
		fprintf(stderr, "test-collector: call on the wrong method %s\n", method);
		d = (struct decision){ .behaviour = COLLECTOR_OK };
	} else {
		d = handle(c, "grpc", GRPC_SLICE_START_PTR(body), GRPC_SLICE_LENGTH(body),
			   !*c->header_key || metadata_has(md, c->header_key, c->header_value));
	}
	grpc_slice_unref(body);
	if (d.behaviour == COLLECTOR_SLOW)
		slow_down(c, d.retry_ms);

	memset(ops, 0, sizeof(ops));
	if (!right_method) {
		status = GRPC_STATUS_UNIMPLEMENTED;
		details = grpc_slice_from_static_string("test collector: unknown method");
	} else if (d.unauthenticated) {
		status = GRPC_STATUS_UNAUTHENTICATED;
		details = grpc_slice_from_static_string("missing the required header");
	} else if (d.behaviour == COLLECTOR_UNAVAILABLE || d.behaviour == COLLECTOR_EXHAUSTED ||
		   d.behaviour == COLLECTOR_PERMANENT || d.behaviour == COLLECTOR_STATUS) {
		status = d.behaviour == COLLECTOR_UNAVAILABLE ? GRPC_STATUS_UNAVAILABLE
			 : d.behaviour == COLLECTOR_EXHAUSTED ? GRPC_STATUS_RESOURCE_EXHAUSTED
			 : d.behaviour == COLLECTOR_STATUS    ? (grpc_status_code)d.code
							      : GRPC_STATUS_INVALID_ARGUMENT;
		details = grpc_slice_from_static_string("test collector says no");
		if (d.behaviour == COLLECTOR_UNAVAILABLE || (d.behaviour == COLLECTOR_STATUS && d.retry_info)) {
			n = retry_status(status, d.retry_ms, buf, sizeof(buf));
			trailer.key = grpc_slice_from_static_string("grpc-status-details-bin");
			trailer.value = grpc_slice_from_copied_buffer((const char *)buf, n);
			has_trailer = true;
		}
	}
	n = 0;
	if (status == GRPC_STATUS_OK) {
		n = response_body(d.behaviour, buf, sizeof(buf));
		resp_slice = grpc_slice_from_copied_buffer((const char *)buf, n);
		response = grpc_raw_byte_buffer_create(&resp_slice, 1);
		grpc_slice_unref(resp_slice);
	}
	n = 0;
	if (response) {
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = response;
	}
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = status;
	ops[n].data.send_status_from_server.status_details = &details;
	ops[n].data.send_status_from_server.trailing_metadata_count = has_trailer ? 1 : 0;
	ops[n++].data.send_status_from_server.trailing_metadata = has_trailer ? &trailer : NULL;
	ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[n++].data.recv_close_on_server.cancelled = &cancelled;
	if (grpc_call_start_batch(call, ops, n, TAG_BATCH, NULL) == GRPC_CALL_OK)
		grpc_wait(c, TAG_BATCH, shutdown_seen);
	if (response)
		grpc_byte_buffer_destroy(response);
	if (has_trailer) {
		grpc_slice_unref(trailer.key);
		grpc_slice_unref(trailer.value);
	}
	grpc_slice_unref(details);
}

static void *grpc_main(void *arg)
{
	struct collector *c = arg;
	bool shutdown_seen = false;

	while (!shutdown_seen) {
		grpc_call *call = NULL;
		grpc_call_details details;
		grpc_metadata_array md;
		bool ok;

		grpc_call_details_init(&details);
		grpc_metadata_array_init(&md);
		if (grpc_server_request_call(c->server, &call, &details, &md, c->cq, c->cq, TAG_NEW_CALL) != GRPC_CALL_OK) {
			grpc_call_details_destroy(&details);
			grpc_metadata_array_destroy(&md);
			break;
		}
		ok = grpc_wait(c, TAG_NEW_CALL, &shutdown_seen);
		if (ok && call)
			serve_grpc_call(c, call, &details, &md, &shutdown_seen);
		if (call)
			grpc_call_unref(call);
		grpc_call_details_destroy(&details);
		grpc_metadata_array_destroy(&md);
		if (!ok)
			break;
	}
	/* Wait for the server's shutdown notification. */
	while (!shutdown_seen) {
		grpc_event ev = grpc_completion_queue_next(c->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.type == GRPC_QUEUE_SHUTDOWN || ev.tag == TAG_SHUTDOWN)
			break;
	}
	return NULL;
}

static int start_grpc(struct collector *c)
{
	/* Requests reach the application still compressed, so it can tell gzip from plain. */
	grpc_arg arg = { .type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_ENABLE_PER_MESSAGE_DECOMPRESSION,
			 .value.integer = 0 };
	grpc_channel_args args = { .num_args = 1, .args = &arg };
	grpc_server_credentials *creds;
	char addr[64];

	c->cq = grpc_completion_queue_create_for_next(NULL);
	c->server = grpc_server_create(&args, NULL);
	grpc_server_register_completion_queue(c->server, c->cq, NULL);
	if (c->cfg.cert_file && c->cfg.key_file) {
		char *cert = export_read_file(c->cfg.cert_file, 1 << 20), *key = export_read_file(c->cfg.key_file, 1 << 20);
		char *client_ca = c->cfg.client_ca_file ? export_read_file(c->cfg.client_ca_file, 1 << 20) : NULL;
		grpc_ssl_pem_key_cert_pair pair = { .private_key = key, .cert_chain = cert };

		if (!cert || !key || (c->cfg.require_client_cert && !client_ca)) {
			fprintf(stderr, "test-collector: cannot read %s, %s or the client CA\n", c->cfg.cert_file,
				c->cfg.key_file);
			free(cert);
			free(key);
			free(client_ca);
			return -1;
		}
		creds = grpc_ssl_server_credentials_create_ex(
			client_ca, &pair, 1,
			c->cfg.require_client_cert ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
						   : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
			NULL);
		free(cert);
		free(key);
		free(client_ca);
	} else {
		creds = grpc_insecure_server_credentials_create();
	}
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", c->cfg.grpc_port);
	c->grpc_port = grpc_server_add_http2_port(c->server, addr, creds);
	grpc_server_credentials_release(creds);
	if (c->grpc_port <= 0) {
		fprintf(stderr, "test-collector: cannot listen on %s\n", addr);
		return -1;
	}
	grpc_server_start(c->server);
	c->grpc_started = true;
	return pthread_create(&c->grpc_thread, NULL, grpc_main, c) ? -1 : 0;
}

static void stop_grpc(struct collector *c)
{
	if (!c->server)
		return;
	if (c->grpc_started) {
		grpc_server_shutdown_and_notify(c->server, c->cq, TAG_SHUTDOWN);
		grpc_server_cancel_all_calls(c->server);
		pthread_join(c->grpc_thread, NULL);
	}
	grpc_server_destroy(c->server);
	grpc_completion_queue_shutdown(c->cq);
	while (grpc_completion_queue_next(c->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(c->cq);
}

/* ---- HTTP ---- */

/* Read into buf until it holds at least want bytes; false on EOF, error, stop or 30 s idle. */
static bool read_more(struct collector *c, int fd, uint8_t *buf, size_t *have, size_t want)
{
	int idle_ms = 0;

	while (*have < want) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (c->stopping || idle_ms > 30000)
			return false;
		if (poll(&p, 1, 100) == 0) {
			idle_ms += 100;
			continue;
		}
		n = read(fd, buf + *have, want - *have);
		if (n <= 0)
			return false;
		*have += (size_t)n;
	}
	return true;
}

static const char *find_header(char *headers, const char *name)
{
	size_t n = strlen(name);

	for (char *line = strstr(headers, "\r\n"); line; line = strstr(line + 2, "\r\n")) {
		char *p = line + 2;

		if (!strncasecmp(p, name, n) && p[n] == ':') {
			p += n + 1;
			while (*p == ' ')
				p++;
			return p;
		}
	}
	return NULL;
}

static bool header_is(char *headers, const char *name, const char *value)
{
	const char *v = find_header(headers, name);

	return v && !strncmp(v, value, strlen(value)) && (v[strlen(value)] == '\r' || !v[strlen(value)]);
}

static uint8_t *gunzip(const uint8_t *data, size_t len, size_t *out_len)
{
	z_stream zs = { 0 };
	size_t cap = len * 4 + 1024;
	uint8_t *out = malloc(cap);
	int r;

	if (!out || inflateInit2(&zs, 15 + 16) != Z_OK) {
		free(out);
		return NULL;
	}
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)len;
	do {
		if (zs.total_out == cap) {
			uint8_t *grown = cap * 2 <= MAX_BODY_BYTES ? realloc(out, cap * 2) : NULL;

			if (!grown)
				break;
			out = grown;
			cap *= 2;
		}
		zs.next_out = out + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		r = inflate(&zs, Z_NO_FLUSH);
	} while (r == Z_OK);
	*out_len = zs.total_out;
	inflateEnd(&zs);
	if (r != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	return out;
}

static void http_reply(int fd, int status, const char *reason, const char *extra, const uint8_t *body, size_t len)
{
	char head[512];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: application/x-protobuf\r\nContent-Length: %zu\r\n%s\r\n",
			 status, reason, len, extra ? extra : "");

	if (write(fd, head, (size_t)n) < 0 || (len && write(fd, body, len) < 0))
		return;
}

/* Serve requests on one connection until it closes. */
static void serve_http_connection(struct collector *c, int fd)
{
	uint8_t *buf = malloc(MAX_HEADER_BYTES + 1);
	size_t have = 0;

	while (buf && !c->stopping) {
		char *end = NULL, *headers;
		const char *cl, *req_header = NULL;
		size_t head_len, body_len, plain_len = 0;
		uint8_t *body, *plain = NULL, out[256];
		struct decision d;
		bool gz, header_ok;

		while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
			if (have >= MAX_HEADER_BYTES || !read_more(c, fd, buf, &have, have + 1))
				goto out;
		}
		head_len = (size_t)((uint8_t *)end - buf) + 4;
		headers = strndup((char *)buf, head_len - 2);
		cl = find_header(headers, "Content-Length");
		body_len = cl ? strtoul(cl, NULL, 10) : 0;
		if (strncmp(headers, "POST /v1development/profiles ", 29) || !cl || body_len > MAX_BODY_BYTES) {
			http_reply(fd, 404, "Not Found", "Connection: close\r\n", NULL, 0);
			free(headers);
			goto out;
		}
		body = malloc(body_len + 1);
		memcpy(body, buf + head_len, have - head_len < body_len ? have - head_len : body_len);
		{
			size_t got = have - head_len < body_len ? have - head_len : body_len;
			size_t rest = have - head_len - got;

			if (!read_more(c, fd, body, &got, body_len)) {
				free(body);
				free(headers);
				goto out;
			}
			/* Keep what follows the body (pipelining) for the next request. */
			memmove(buf, buf + head_len + (have - head_len - rest), rest);
			have = rest;
		}
		gz = header_is(headers, "Content-Encoding", "gzip");
		if (gz)
			plain = gunzip(body, body_len, &plain_len);
		if (*c->header_key)
			req_header = find_header(headers, c->header_key);
		header_ok = !*c->header_key || (req_header && !strncmp(req_header, c->header_value, strlen(c->header_value)) &&
						 req_header[strlen(c->header_value)] == '\r');
		pthread_mutex_lock(&c->lock);
		c->stats.http_gzip += gz;
		pthread_mutex_unlock(&c->lock);
		d = handle(c, "http", gz ? plain : body, gz ? plain_len : body_len, header_ok && (!gz || plain));
		if (d.behaviour == COLLECTOR_SLOW)
			slow_down(c, d.retry_ms);
		if (d.unauthenticated) {
			http_reply(fd, 401, "Unauthorized", NULL, (const uint8_t *)"missing the required header", 27);
		} else if (d.behaviour == COLLECTOR_UNAVAILABLE) {
			char extra[64];

			snprintf(extra, sizeof(extra), "Retry-After: %u\r\n", (d.retry_ms + 999) / 1000);
			http_reply(fd, 503, "Service Unavailable", extra, NULL, 0);
		} else if (d.behaviour == COLLECTOR_STATUS) {
			char extra[64] = "";

			if (d.retry_info)
				snprintf(extra, sizeof(extra), "Retry-After: %u\r\n", d.retry_ms / 1000);
			http_reply(fd, d.code, "Scripted", extra, (const uint8_t *)"scripted status", 15);
		} else if (d.behaviour == COLLECTOR_EXHAUSTED) {
			http_reply(fd, 429, "Too Many Requests", NULL, NULL, 0);
		} else if (d.behaviour == COLLECTOR_PERMANENT) {
			http_reply(fd, 400, "Bad Request", NULL, (const uint8_t *)"test collector says no", 22);
		} else {
			size_t n = response_body(d.behaviour, out, sizeof(out));

			http_reply(fd, 200, "OK", NULL, out, n);
		}
		free(plain);
		free(body);
		free(headers);
	}
out:
	free(buf);
	close(fd);
}

/*
 * raw_garbage: read what the client sends first (an HTTP/2 preface or an HTTP request), answer
 * 1 to 4 KiB of random bytes, close. Neither protocol can make sense of it.
 */
static void serve_garbage_connection(struct collector *c, int fd, unsigned *seed)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint8_t buf[4096];
	size_t n = 1 + (size_t)rand_r(seed) % sizeof(buf);

	pthread_mutex_lock(&c->lock);
	c->stats.garbage_connections++;
	pthread_mutex_unlock(&c->lock);
	if (poll(&p, 1, 1000) > 0 && read(fd, buf, sizeof(buf)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)rand_r(seed);
	if (write(fd, buf, n) < 0)
		goto out;
out:
	close(fd);
}

static void *listen_main(void *arg)
{
	struct listener *l = arg;
	struct collector *c = l->c;
	unsigned seed = (unsigned)l->fd * 2654435761u;

	while (!c->stopping) {
		struct pollfd p = { .fd = l->fd, .events = POLLIN };
		int fd;

		if (poll(&p, 1, 100) <= 0)
			continue;
		fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (c->cfg.raw_garbage)
			serve_garbage_connection(c, fd, &seed);
		else
			serve_http_connection(c, fd);
	}
	return NULL;
}

/* A TCP listener on 127.0.0.1:port (0: any) served by its own thread; its port, or -1. */
static int start_listener(struct collector *c, struct listener *l, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	socklen_t alen = sizeof(a);
	int one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l->c = c;
	l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0 || setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l->fd, (struct sockaddr *)&a, sizeof(a)) || listen(l->fd, 16) ||
	    getsockname(l->fd, (struct sockaddr *)&a, &alen)) {
		fprintf(stderr, "test-collector: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
		return -1;
	}
	if (pthread_create(&l->thread, NULL, listen_main, l))
		return -1;
	return ntohs(a.sin_port);
}

/* ---- the collector ---- */

struct collector *collector_start(const struct collector_config *cfg)
{
	struct collector *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cfg = *cfg;
	c->http.fd = c->garbage_grpc.fd = -1;
	pthread_mutex_init(&c->lock, NULL);
	if (cfg->require_header) {
		const char *eq = strchr(cfg->require_header, '=');

		if (!eq)
			goto fail;
		snprintf(c->header_key, sizeof(c->header_key), "%.*s", (int)(eq - cfg->require_header), cfg->require_header);
		snprintf(c->header_value, sizeof(c->header_value), "%s", eq + 1);
		for (char *k = c->header_key; *k; k++)
			*k = (char)tolower((unsigned char)*k);
	}
	grpc_init();
	if (cfg->raw_garbage && cfg->grpc_port >= 0 &&
	    (c->grpc_port = start_listener(c, &c->garbage_grpc, cfg->grpc_port)) < 0)
		goto fail;
	if (!cfg->raw_garbage && cfg->grpc_port >= 0 && start_grpc(c))
		goto fail;
	if (cfg->http_port >= 0 && (c->http_port = start_listener(c, &c->http, cfg->http_port)) < 0)
		goto fail;
	return c;
fail:
	collector_stop(c);
	return NULL;
}

void collector_stop(struct collector *c)
{
	if (!c)
		return;
	c->stopping = true;
	if (c->http_port > 0)
		pthread_join(c->http.thread, NULL);
	if (c->http.fd >= 0)
		close(c->http.fd);
	if (c->cfg.raw_garbage && c->grpc_port > 0)
		pthread_join(c->garbage_grpc.thread, NULL);
	if (c->garbage_grpc.fd >= 0)
		close(c->garbage_grpc.fd);
	stop_grpc(c);
	grpc_shutdown();
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int collector_grpc_port(const struct collector *c)
{
	return c->grpc_port;
}

int collector_http_port(const struct collector *c)
{
	return c->http_port;
}

void collector_set_behaviour(struct collector *c, enum collector_behaviour b, unsigned count, unsigned retry_ms)
{
	pthread_mutex_lock(&c->lock);
	c->behaviour = b;
	c->behaviour_left = count;
	c->retry_ms = retry_ms;
	pthread_mutex_unlock(&c->lock);
}

void collector_set_status(struct collector *c, int code, bool retry_info, unsigned retry_ms)
{
	pthread_mutex_lock(&c->lock);
	c->behaviour = COLLECTOR_STATUS;
	c->behaviour_left = 1;
	c->retry_ms = retry_ms;
	c->status_code = code;
	c->status_retry_info = retry_info;
	pthread_mutex_unlock(&c->lock);
}

void collector_get_stats(struct collector *c, struct collector_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->stats;
	pthread_mutex_unlock(&c->lock);
}
