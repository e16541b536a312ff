// SPDX-License-Identifier: Apache-2.0
/*
 * The OTLP collector's flags (--endpoint, --protocol, ... --queue-bytes), and the
 * OTEL_EXPORTER_OTLP_* variables that fill what they leave unset (export/otel_env.c reads them).
 */
#include "config/options_parts.h"

#include "config/config_file.h"
#include "parse_units.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *plain_getenv(const char *name)
{
	return getenv(name);
}

static int size_option(const char *name, const char *arg, size_t min, size_t *value, FILE *err)
{
	if (parse_size(arg, value) || *value < min) {
		fprintf(err, "otelprofd: --%s: '%s' is not a size of at least %zu (examples: 4096, 512KiB, 16MiB)\n",
			name, arg, min);
		return -EINVAL;
	}
	return 0;
}

static int duration_option(const char *name, const char *arg, uint64_t min_ns, uint64_t max_ns, uint64_t *ns,
			   FILE *err)
{
	if (parse_duration(arg, ns) || *ns < min_ns || *ns > max_ns) {
		fprintf(err, "otelprofd: --%s: '%s' is not a duration from %llums to %llus (examples: 10s, 500ms)\n",
			name, arg, (unsigned long long)(min_ns / 1000000), (unsigned long long)(max_ns / 1000000000));
		return -EINVAL;
	}
	return 0;
}

bool export_flags_apply(struct export_config *e, int c, const char *arg, FILE *err, bool *bad)
{
	unsigned long long v;

	switch (c) {
	case OPT_ENDPOINT:
		e->endpoint = arg;
		break;
	case OPT_PROTOCOL:
		if (!strcmp(arg, "grpc"))
			e->protocol = EXPORT_PROTOCOL_GRPC;
		else if (!strcmp(arg, "http/protobuf") || !strcmp(arg, "http"))
			e->protocol = EXPORT_PROTOCOL_HTTP;
		else {
			fprintf(err, "otelprofd: --protocol: '%s' is not supported (grpc or http/protobuf)\n", arg);
			*bad = true;
		}
		break;
	case OPT_HEADERS:
		e->headers_text = arg;
		break;
	case OPT_INSECURE:
		e->insecure = EXPORT_YES;
		break;
	case OPT_CA_FILE:
		e->ca_file = arg;
		break;
	case OPT_CLIENT_CERT:
		e->client_cert = arg;
		break;
	case OPT_CLIENT_KEY:
		e->client_key = arg;
		break;
	case OPT_COMPRESSION:
		if (!strcmp(arg, "gzip"))
			e->compression = EXPORT_COMPRESSION_GZIP;
		else if (!strcmp(arg, "none"))
			e->compression = EXPORT_COMPRESSION_NONE;
		else {
			fprintf(err, "otelprofd: --compression: '%s' is not supported (gzip or none)\n", arg);
			*bad = true;
		}
		break;
	case OPT_TIMEOUT:
		/* At most an hour, as OTEL_EXPORTER_OTLP_TIMEOUT: deadlines are now + timeout. */
		*bad = duration_option("timeout", arg, 1000000, 3600000000000ULL, &e->timeout_ns, err);
		break;
	case OPT_EXPORT_INTERVAL:
		*bad = duration_option("export-interval", arg, 100000000, 3600000000000ULL, &e->interval_ns, err);
		break;
	case OPT_MAX_MESSAGE_SIZE:
		*bad = size_option("max-message-size", arg, 4096, &e->max_message_size, err);
		break;
	case OPT_QUEUE_SIZE:
		*bad = options_number_value("queue-size", arg, 1, 100000, &v, err);
		e->queue_size = (size_t)v;
		break;
	case OPT_QUEUE_BYTES:
		*bad = size_option("queue-bytes", arg, 4096, &e->queue_bytes, err);
		break;
	default:
		return false;
	}
	return true;
}

bool export_flags_environment_sets(int c)
{
	static const struct {
		int option;
		const char *name;
	} vars[] = {
		{ OPT_ENDPOINT, "ENDPOINT" }, { OPT_PROTOCOL, "PROTOCOL" }, { OPT_HEADERS, "HEADERS" },
		{ OPT_INSECURE, "INSECURE" }, { OPT_CA_FILE, "CERTIFICATE" },
		{ OPT_CLIENT_CERT, "CLIENT_CERTIFICATE" }, { OPT_CLIENT_KEY, "CLIENT_KEY" },
		{ OPT_COMPRESSION, "COMPRESSION" }, { OPT_TIMEOUT, "TIMEOUT" },
	};
	char name[96];

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *prefixes[] = { "OTEL_EXPORTER_OTLP_PROFILES_", "OTEL_EXPORTER_OTLP_" };

		if (vars[i].option != c)
			continue;
		for (size_t j = 0; j < 2; j++) {
			const char *v;

			snprintf(name, sizeof(name), "%s%s", prefixes[j], vars[i].name);
			v = getenv(name);
			if (v && *v)
				return true;
		}
	}
	return false;
}

/* otel_env_apply()'s errors about options the file may have set, to locate them at its lines. */
static const struct {
	const char *prefix;
	int options[2];
} export_errors[] = {
	{ "otelprofd: endpoint: ", { OPT_ENDPOINT, OPT_ENDPOINT } },
	{ "otelprofd: headers: ", { OPT_HEADERS, OPT_HEADERS } },
	{ "otelprofd: a client certificate needs its key", { OPT_CLIENT_CERT, OPT_CLIENT_KEY } },
};

int export_flags_apply_environment(struct options *opts, const unsigned *line, FILE *err)
{
	char *msg = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&msg, &len);
	unsigned at = 0;
	int r;

	if (!mem)
		return -ENOMEM;
	r = otel_env_apply(&opts->export, plain_getenv, mem);
	fclose(mem);
	for (size_t i = 0; r && msg && i < sizeof(export_errors) / sizeof(export_errors[0]); i++) {
		unsigned a = line[export_errors[i].options[0]], b = line[export_errors[i].options[1]];

		if (!strncmp(msg, export_errors[i].prefix, strlen(export_errors[i].prefix)))
			at = a ? a : b;
	}
	if (msg && at)
		fprintf(err, "otelprofd: %s:%u: %s", opts->config->name, at, msg + strlen("otelprofd: "));
	else if (msg)
		fputs(msg, err);
	free(msg);
	return r;
}
