/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One way of sending a serialized ExportProfilesServiceRequest to a collector: gRPC
 * (export_grpc.c) or HTTP (export_http.c). A transport is used by one thread at a time (the
 * exporter's sender); it classifies every outcome as the OTLP sheet says, so the exporter only
 * decides when to retry.
 */
#ifndef OTELPROFD_EXPORT_TRANSPORT_H
#define OTELPROFD_EXPORT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "export/otel_env.h"

enum export_outcome {
	EXPORT_OK,        /* accepted (possibly partially: see rejected) */
	EXPORT_RETRYABLE, /* the sheet's retryable codes, and transport errors (no connection, timeout) */
	EXPORT_PERMANENT, /* anything else: drop the request */
};

struct export_result {
	enum export_outcome outcome;
	uint64_t retry_after_ns; /* the server's delay (gRPC RetryInfo, HTTP Retry-After); 0 = none */
	int64_t rejected;        /* partial_success.rejected_profiles */
	int code;                /* gRPC status code or HTTP status; 0 when no answer */
	char message[256];       /* the server's message or the transport error, for the log */
};

struct export_transport {
	/* Send one request within timeout_ns; fills res. Returns 0 (even on failure: see res). */
	int (*send)(struct export_transport *t, const uint8_t *data, size_t len, uint64_t timeout_ns,
		    struct export_result *res);
	void (*free)(struct export_transport *t);
	const char *name; /* "grpc", "http": for the log */
};

/* Constructors return NULL with *err = -errno and a one-line reason in errbuf. */
struct export_transport *export_grpc_new(const struct export_config *cfg, int *err, char *errbuf, size_t errlen);
struct export_transport *export_http_new(const struct export_config *cfg, int *err, char *errbuf, size_t errlen);

/* google.rpc.Status bytes -> its message, RetryInfo delay (0 = none or zero) and whether it carries
 * a RetryInfo at all (retry_info may be NULL). false when undecodable. */
bool export_parse_rpc_status(const uint8_t *data, size_t len, char *message, size_t msglen, uint64_t *retry_ns,
			     bool *retry_info);
/* The sheet's classification of a gRPC status code (RESOURCE_EXHAUSTED is retryable only with a
 * RetryInfo) and of an HTTP status (429, 502, 503, 504 retryable; 2xx OK; else permanent). */
enum export_outcome export_grpc_classify(int code, bool has_retry_info);
enum export_outcome export_http_classify(long status);
/* ExportProfilesServiceResponse bytes -> partial success; false when undecodable. */
bool export_parse_response(const uint8_t *data, size_t len, int64_t *rejected, char *message, size_t msglen);
/* Read a whole (small) file, NUL-terminated; NULL with errno. The caller frees. */
char *export_read_file(const char *path, size_t max);

#endif
