/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exporter's configuration: flags (config/export_flags.c) fill struct export_config first, then
 * otel_env_apply() fills what they left unset from the OpenTelemetry variables
 * (OTEL_EXPORTER_OTLP_*, with the OTEL_EXPORTER_OTLP_PROFILES_* form winning over the generic one,
 * OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME), then the defaults, and resolves the endpoint.
 * Flags win over variables, variables over defaults.
 *
 * Strings set by flags point into argv; everything otel_env_apply() makes (url, target, headers,
 * resource attributes) is owned by the config and freed by export_config_free().
 */
#ifndef OTELPROFD_OTEL_ENV_H
#define OTELPROFD_OTEL_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct otlp_attr; /* otlp_encode.h */

#define EXPORT_DEFAULT_INTERVAL_NS (10ULL * 1000000000ULL)
#define EXPORT_DEFAULT_TIMEOUT_NS (10ULL * 1000000000ULL)
#define EXPORT_DEFAULT_QUEUE_SIZE 16
#define EXPORT_DEFAULT_QUEUE_BYTES (64u << 20)
#define EXPORT_DEFAULT_GRPC_PORT 4317
#define EXPORT_DEFAULT_HTTP_PORT 4318
#define OTLP_HTTP_PROFILES_PATH "/v1development/profiles"

enum export_protocol { EXPORT_PROTOCOL_UNSET, EXPORT_PROTOCOL_GRPC, EXPORT_PROTOCOL_HTTP };
enum export_compression { EXPORT_COMPRESSION_UNSET, EXPORT_COMPRESSION_GZIP, EXPORT_COMPRESSION_NONE };
enum export_tristate { EXPORT_UNSET, EXPORT_NO, EXPORT_YES };

struct export_header {
	char *key;   /* lower-cased (gRPC metadata keys must be) */
	char *value;
};

struct export_config {
	/* Inputs, from flags (then from the environment when unset). */
	const char *endpoint;         /* --endpoint; NULL = none given */
	enum export_protocol protocol;
	const char *headers_text;     /* --headers "k=v,k2=v2" */
	enum export_tristate insecure;
	const char *ca_file, *client_cert, *client_key;
	enum export_compression compression;
	uint64_t timeout_ns;          /* per request; 0 = unset */
	uint64_t interval_ns;         /* export interval; 0 = unset */
	size_t max_message_size;      /* 0 = unset */
	size_t queue_size;            /* requests waiting; 0 = unset */
	size_t queue_bytes;           /* bytes waiting; 0 = unset */

	/* Results of otel_env_apply(). */
	bool enabled;                 /* a collector endpoint is configured */
	bool tls;                     /* TLS (https / not insecure) */
	char *url;                    /* HTTP: full URL of the profiles endpoint */
	char *target;                 /* gRPC: host:port */
	struct export_header *headers; size_t nheaders;
	struct otlp_attr *resource_attrs; size_t nresource_attrs; /* owned key/value strings */
	char *owned[8];               /* strings read from the environment */
	size_t nowned;
};

/* getenv-like lookup, so tests can pass their own environment. */
typedef const char *(*otel_getenv_fn)(const char *name);

/* Fill unset fields from the environment, apply defaults, resolve the endpoint. 0 or -EINVAL
 * (the bad variable or flag is named in a one-line message on err). */
int otel_env_apply(struct export_config *cfg, otel_getenv_fn getenv_fn, FILE *err);
void export_config_free(struct export_config *cfg);

/* "k=v,k2=v2" with %XX-decoded values (the OTEL list format) into pairs. 0, or -EINVAL/-ENOMEM with
 * the reason in why, which names the entry by its position and key, never by its value. */
int otel_parse_list(const char *text, struct export_header **pairs, size_t *n, char *why, size_t whysize);

#endif
