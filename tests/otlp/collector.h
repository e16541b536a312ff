/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A test OTLP profiles collector on 127.0.0.1: a gRPC server on the gRPC core C API and a small
 * HTTP/1.1 receiver, each on its own thread. Every request is decoded with the project's generated
 * code and validated (otlp_check.h); optionally saved to a directory as NNNN-grpc.pb / NNNN-http.pb
 * (decompressed). Behaviours let tests script failures: UNAVAILABLE with RetryInfo, 503 with
 * Retry-After, permanent errors, partial success, garbage answers, slow answers. With raw_garbage
 * the ports are no gRPC or HTTP servers at all but raw TCP listeners that answer random bytes.
 */
#ifndef OTELPROFD_TESTS_COLLECTOR_H
#define OTELPROFD_TESTS_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

enum collector_behaviour {
	COLLECTOR_OK,
	COLLECTOR_UNAVAILABLE,     /* gRPC UNAVAILABLE + RetryInfo(retry_ms) / HTTP 503 + Retry-After */
	COLLECTOR_EXHAUSTED,       /* gRPC RESOURCE_EXHAUSTED without RetryInfo / HTTP 429 */
	COLLECTOR_PERMANENT,       /* gRPC INVALID_ARGUMENT / HTTP 400 */
	COLLECTOR_PARTIAL,         /* OK with partial_success { rejected_profiles 1, "test rejection" } */
	COLLECTOR_GARBAGE,         /* OK with a response that is not protobuf */
	COLLECTOR_SLOW,            /* OK, but only after delay_ms (longer than the client's timeout) */
	COLLECTOR_STATUS,          /* the status of collector_set_status() */
};

struct collector_config {
	int grpc_port;             /* 0: any free port; -1: no gRPC server */
	int http_port;             /* 0: any free port; -1: no HTTP server */
	const char *cert_file, *key_file; /* gRPC TLS when both are set */
	const char *require_header; /* "key=value": requests without it are refused (UNAUTHENTICATED/401) */
	const char *out_dir;       /* save every valid request here; NULL = don't */
	bool raw_garbage;          /* grpc_port and http_port are raw TCP listeners answering random
				      bytes (neither HTTP/2 nor HTTP), then closing */
	bool require_client_cert;  /* TLS: refuse clients without a certificate signed by client_ca_file */
	const char *client_ca_file; /* CA of the client certificates (gRPC: required with require_client_cert) */
	bool expect_gzip;          /* gRPC requests must arrive gzip-compressed (counted in not_gzip) */
};

struct collector_stats {
	unsigned requests;         /* received, whatever the answer */
	unsigned grpc_requests, http_requests;
	unsigned valid, invalid;   /* decoded and checked */
	unsigned accepted;         /* answered OK (or partial) */
	unsigned unauthenticated;  /* refused for the missing header */
	unsigned http_gzip;        /* HTTP requests with Content-Encoding: gzip */
	unsigned slow;             /* answered late (COLLECTOR_SLOW) */
	unsigned garbage_connections; /* raw_garbage: connections answered with random bytes */
	unsigned wrong_method;     /* gRPC calls on another method than ProfilesService/Export (refused) */
	unsigned not_gzip;         /* expect_gzip: gRPC requests that were not gzip-compressed */
	uint64_t samples;          /* in accepted requests */
	char last_error[256];      /* first violation of the last invalid request */
};

struct collector;

/* NULL when a server cannot start (the reason on stderr). */
struct collector *collector_start(const struct collector_config *cfg);
void collector_stop(struct collector *c);
int collector_grpc_port(const struct collector *c);
int collector_http_port(const struct collector *c);
/* Answer the next count requests (0 = all) with behaviour, then OK again. retry_ms is the server's
 * retry delay (UNAVAILABLE) or how long the answer waits (SLOW). */
void collector_set_behaviour(struct collector *c, enum collector_behaviour b, unsigned count, unsigned retry_ms);
/* Answer the next request with gRPC status / HTTP status code: gRPC with a RetryInfo of retry_ms
 * when retry_info (zero is a RetryInfo too); HTTP with Retry-After: retry_ms/1000 when retry_info. */
void collector_set_status(struct collector *c, int code, bool retry_info, unsigned retry_ms);
void collector_get_stats(struct collector *c, struct collector_stats *out);

#endif
