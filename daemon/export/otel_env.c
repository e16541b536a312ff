// SPDX-License-Identifier: Apache-2.0
#include "export/otel_env.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/otlp_encode.h"
#include "parse_units.h"
#include "parse.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* %XX-decode in place; -EINVAL on a broken escape. */
static int percent_decode(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (*s == '%') {
			int hi = hex_digit(s[1]), lo = hi < 0 ? -1 : hex_digit(s[2]);

			if (hi < 0 || lo < 0)
				return -EINVAL;
			*out++ = (char)(hi * 16 + lo);
			s += 2;
		} else {
			*out++ = *s;
		}
	}
	*out = 0;
	return 0;
}

static void free_pairs(struct export_header *pairs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(pairs[i].key);
		free(pairs[i].value);
	}
	free(pairs);
}

int otel_parse_list(const char *text, struct export_header **pairs, size_t *n, char *why, size_t whysize)
{
	char *copy = strdup(text ? text : ""), *tok, *next, shown[72];
	struct export_header *out = NULL;
	size_t count = 0, entry = 0;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	/* Entries are numbered as the commas place them, empty ones too, so a message can point at
	 * one without showing its value (a header's value is often a secret). */
	for (tok = copy; tok; tok = next) {
		char *eq, *key, *value;
		struct export_header *grown;

		next = strchr(tok, ',');
		if (next)
			*next++ = 0;
		entry++;
		if (!*parse_trim(tok))
			continue;
		r = -EINVAL;
		eq = strchr(tok, '=');
		if (!eq) {
			snprintf(why, whysize, "entry %zu: no '=' between key and value", entry);
			break;
		}
		*eq = 0;
		key = parse_trim(tok);
		value = parse_trim(eq + 1);
		if (!*key || percent_decode(key)) {
			snprintf(why, whysize, "entry %zu: %s", entry, *key ? "the key is not percent-encoded properly"
									    : "empty key");
			break;
		}
		if (percent_decode(value)) {
			snprintf(why, whysize, "entry %zu ('%s'): value is not percent-encoded properly", entry,
				 parse_escape(key, shown, sizeof(shown)));
			break;
		}
		r = -ENOMEM;
		grown = realloc(out, (count + 1) * sizeof(*out));
		if (!grown)
			break;
		out = grown;
		out[count].key = strdup(key);
		out[count].value = strdup(value);
		count++;
		if (!out[count - 1].key || !out[count - 1].value)
			break;
		r = 0;
	}
	free(copy);
	if (r == -ENOMEM)
		snprintf(why, whysize, "out of memory");
	if (r) {
		free_pairs(out, count);
		return r;
	}
	*pairs = out;
	*n = count;
	return 0;
}

/* OTEL_EXPORTER_OTLP_PROFILES_<name>, else OTEL_EXPORTER_OTLP_<name>; *specific tells which. */
static const char *otlp_env(otel_getenv_fn getenv_fn, const char *name, bool *specific)
{
	char buf[96];
	const char *v;

	snprintf(buf, sizeof(buf), "OTEL_EXPORTER_OTLP_PROFILES_%s", name);
	v = getenv_fn(buf);
	if (specific)
		*specific = v && *v;
	if (v && *v)
		return v;
	snprintf(buf, sizeof(buf), "OTEL_EXPORTER_OTLP_%s", name);
	v = getenv_fn(buf);
	return v && *v ? v : NULL;
}

static int keep(struct export_config *cfg, char *s)
{
	if (!s)
		return -ENOMEM;
	if (cfg->nowned >= sizeof(cfg->owned) / sizeof(cfg->owned[0])) {
		free(s);
		return -ENOMEM;
	}
	cfg->owned[cfg->nowned++] = s;
	return 0;
}

static bool has_scheme(const char *url, const char *scheme)
{
	size_t n = strlen(scheme);

	return !strncasecmp(url, scheme, n) && !strncmp(url + n, "://", 3);
}

/* How the path of an endpoint URL is treated for HTTP. */
enum endpoint_kind {
	ENDPOINT_AS_IS,    /* OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT: the full URL */
	ENDPOINT_BASE,     /* OTEL_EXPORTER_OTLP_ENDPOINT: a base URL, /v1development/profiles appended */
	ENDPOINT_FLAG,     /* --endpoint: the path appended only when the URL has none */
};

/* Resolve the endpoint into a gRPC target (host:port) or an HTTP URL; -EINVAL with the reason in
 * *why when it is not a collector address. */
static int resolve_endpoint(struct export_config *cfg, const char *endpoint, enum endpoint_kind kind,
			    const char **why)
{
	const char *rest = endpoint, *slash, *suffix = "";
	bool https = has_scheme(endpoint, "https"), http = has_scheme(endpoint, "http");
	size_t hostlen, len, path;
	char host[256];
	unsigned port;

	if (https || http)
		rest = strstr(endpoint, "://") + 3;
	else if (strstr(endpoint, "://")) {
		*why = "the scheme is not http or https";
		return -EINVAL;
	}
	/* Written into logs and, for HTTP, into the request line. */
	if (parse_has_control(endpoint) || strpbrk(endpoint, " \"")) {
		*why = "control characters, spaces and quotes are not allowed";
		return -EINVAL;
	}
	slash = strchr(rest, '/');
	hostlen = slash ? (size_t)(slash - rest) : strlen(rest);
	if (parse_host_port(rest, hostlen, false, host, sizeof(host), &port, why))
		return -EINVAL;
	/* A scheme decides TLS; without one, --insecure / OTEL_EXPORTER_OTLP_INSECURE do (default TLS). */
	cfg->tls = https || (!http && cfg->insecure != EXPORT_YES);

	if (cfg->protocol == EXPORT_PROTOCOL_GRPC) {
		if (asprintf(&cfg->target, port ? "%.*s" : "%.*s:%d", (int)hostlen, rest, EXPORT_DEFAULT_GRPC_PORT) < 0) {
			cfg->target = NULL;
			return -ENOMEM;
		}
		return 0;
	}
	len = strlen(endpoint);
	if (kind == ENDPOINT_BASE || (kind == ENDPOINT_FLAG && (!slash || !strcmp(slash, "/")))) {
		while (len && endpoint[len - 1] == '/')
			len--;
		suffix = OTLP_HTTP_PROFILES_PATH;
	}
	/* Without a port, OTLP/HTTP's 4318, not the scheme's 80 or 443. */
	path = slash ? (size_t)(slash - endpoint) : strlen(endpoint);
	if (asprintf(&cfg->url, "%s%.*s%s%.*s%s", https ? "https://" : http ? "http://" : cfg->tls ? "https://" : "http://",
		     (int)hostlen, rest, port ? "" : ":" STRINGIFY(EXPORT_DEFAULT_HTTP_PORT),
		     (int)(len > path ? len - path : 0), endpoint + path, suffix) < 0) {
		cfg->url = NULL;
		return -ENOMEM;
	}
	return 0;
}

/*
 * Headers the transport can send as they are: keys are HTTP tokens (gRPC: lower-case letters,
 * digits, '-', '_', '.', and no reserved "grpc-" prefix), values have no control characters (a
 * gRPC key ending in "-bin" carries bytes). Checked once at startup: a bad header would otherwise
 * fail every request, forever. false with the reason in why.
 */
static bool header_ok(const struct export_header *h, bool grpc, const char **why)
{
	static const char http_token[] = "!#$%&'*+-.^_`|~";
	size_t klen = strlen(h->key);
	bool binary = grpc && klen > 4 && !strcmp(h->key + klen - 4, "-bin");

	for (const char *k = h->key; *k; k++) {
		unsigned char c = (unsigned char)*k;
		bool ok = grpc ? (islower(c) || isdigit(c) || c == '-' || c == '_' || c == '.')
			       : (c < 0x80 && (isalnum(c) || strchr(http_token, c)));

		if (!ok) {
			*why = grpc ? "a key may hold only a-z, 0-9, '-', '_' and '.'" : "a key may hold only token characters";
			return false;
		}
	}
	if (grpc && !strncmp(h->key, "grpc-", 5)) {
		*why = "keys starting with grpc- are reserved";
		return false;
	}
	for (const char *v = h->value; *v && !binary; v++) {
		unsigned char c = (unsigned char)*v;

		if (c < 0x20 || c == 0x7f || (grpc && c >= 0x80)) {
			*why = grpc ? "a value may hold only printable ASCII (or use a -bin key)" : "a value may not hold control characters";
			return false;
		}
	}
	return true;
}

static int resource_attributes(struct export_config *cfg, otel_getenv_fn getenv_fn, FILE *err)
{
	const char *text = getenv_fn("OTEL_RESOURCE_ATTRIBUTES"), *service = getenv_fn("OTEL_SERVICE_NAME");
	struct export_header *pairs = NULL;
	char why[128];
	size_t n = 0;
	int r = otel_parse_list(text, &pairs, &n, why, sizeof(why));

	if (r) {
		fprintf(err, "otelprofd: OTEL_RESOURCE_ATTRIBUTES: %s (expected key=value,key=value)\n", why);
		return r;
	}
	/* OTEL_SERVICE_NAME wins over a service.name in OTEL_RESOURCE_ATTRIBUTES. */
	if (service && *service) {
		struct export_header *grown = realloc(pairs, (n + 1) * sizeof(*pairs));
		size_t i;

		if (!grown) {
			free_pairs(pairs, n);
			return -ENOMEM;
		}
		pairs = grown;
		for (i = 0; i < n && strcmp(pairs[i].key, "service.name"); i++)
			;
		if (i == n) {
			pairs[n].key = strdup("service.name");
			pairs[n++].value = NULL;
		}
		free(pairs[i].value);
		pairs[i].value = strdup(service);
		if (!pairs[i].key || !pairs[i].value) {
			free_pairs(pairs, n);
			return -ENOMEM;
		}
	}
	cfg->resource_attrs = calloc(n ? n : 1, sizeof(*cfg->resource_attrs));
	if (!cfg->resource_attrs) {
		free_pairs(pairs, n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		cfg->resource_attrs[i].key = pairs[i].key;
		cfg->resource_attrs[i].value = pairs[i].value;
	}
	cfg->nresource_attrs = n;
	free(pairs); /* the strings now belong to resource_attrs */
	return 0;
}

static int env_string(struct export_config *cfg, const char **field, otel_getenv_fn getenv_fn,
		      const char *name, FILE *err)
{
	bool specific;
	const char *v;

	if (*field)
		return 0;
	v = otlp_env(getenv_fn, name, &specific);
	if (!v)
		return 0;
	/* Paths end up in log lines: no forged ones. */
	if (parse_has_control(v)) {
		fprintf(err, "otelprofd: OTEL_EXPORTER_OTLP_%s%s: control characters are not allowed\n",
			specific ? "PROFILES_" : "", name);
		return -EINVAL;
	}
	if (keep(cfg, strdup(v)))
		return -ENOMEM;
	*field = cfg->owned[cfg->nowned - 1];
	return 0;
}

int otel_env_apply(struct export_config *cfg, otel_getenv_fn getenv_fn, FILE *err)
{
	const char *v, *endpoint = cfg->endpoint, *why = NULL;
	/* Where headers and endpoint came from, to name it in messages (a flag or a file's key). */
	const char *headers_from = "headers", *endpoint_from = "endpoint";
	enum endpoint_kind kind = ENDPOINT_FLAG;
	bool specific = false;
	char shown[256], list_why[128];
	int r;

	if (!cfg->protocol && (v = otlp_env(getenv_fn, "PROTOCOL", NULL))) {
		if (!strcmp(v, "grpc"))
			cfg->protocol = EXPORT_PROTOCOL_GRPC;
		else if (!strcmp(v, "http/protobuf"))
			cfg->protocol = EXPORT_PROTOCOL_HTTP;
		else {
			fprintf(err, "otelprofd: OTEL_EXPORTER_OTLP_PROTOCOL: '%s' is not supported "
				"(grpc or http/protobuf)\n", parse_escape(v, shown, sizeof(shown)));
			return -EINVAL;
		}
	}
	if (!cfg->protocol)
		cfg->protocol = EXPORT_PROTOCOL_GRPC;
	if (!cfg->insecure && (v = otlp_env(getenv_fn, "INSECURE", NULL)))
		cfg->insecure = !strcasecmp(v, "true") ? EXPORT_YES : EXPORT_NO;
	if (!cfg->compression && (v = otlp_env(getenv_fn, "COMPRESSION", NULL))) {
		if (!strcmp(v, "gzip"))
			cfg->compression = EXPORT_COMPRESSION_GZIP;
		else if (!strcmp(v, "none"))
			cfg->compression = EXPORT_COMPRESSION_NONE;
		else {
			fprintf(err, "otelprofd: OTEL_EXPORTER_OTLP_COMPRESSION: '%s' is not supported (gzip or none)\n",
				parse_escape(v, shown, sizeof(shown)));
			return -EINVAL;
		}
	}
	/* gzip unless told otherwise: profiles shrink several times and collectors accept it. */
	if (!cfg->compression)
		cfg->compression = EXPORT_COMPRESSION_GZIP;
	if (!cfg->timeout_ns && (v = otlp_env(getenv_fn, "TIMEOUT", NULL))) {
		unsigned long long ms;

		if (parse_uint(v, 1, 3600000, &ms)) {
			fprintf(err, "otelprofd: OTEL_EXPORTER_OTLP_TIMEOUT: '%s' is not a number of milliseconds "
				"(1-3600000)\n", parse_escape(v, shown, sizeof(shown)));
			return -EINVAL;
		}
		cfg->timeout_ns = ms * 1000000ULL;
	}
	if (!cfg->timeout_ns)
		cfg->timeout_ns = EXPORT_DEFAULT_TIMEOUT_NS;
	if (!cfg->interval_ns)
		cfg->interval_ns = EXPORT_DEFAULT_INTERVAL_NS;
	if (!cfg->max_message_size)
		cfg->max_message_size = OTLP_DEFAULT_MAX_MESSAGE_SIZE;
	if (!cfg->queue_size)
		cfg->queue_size = EXPORT_DEFAULT_QUEUE_SIZE;
	if (!cfg->queue_bytes)
		cfg->queue_bytes = EXPORT_DEFAULT_QUEUE_BYTES;
	if (!cfg->headers_text && otlp_env(getenv_fn, "HEADERS", &specific))
		headers_from = specific ? "OTEL_EXPORTER_OTLP_PROFILES_HEADERS" : "OTEL_EXPORTER_OTLP_HEADERS";
	if ((r = env_string(cfg, &cfg->ca_file, getenv_fn, "CERTIFICATE", err)) ||
	    (r = env_string(cfg, &cfg->client_cert, getenv_fn, "CLIENT_CERTIFICATE", err)) ||
	    (r = env_string(cfg, &cfg->client_key, getenv_fn, "CLIENT_KEY", err)))
		return r;
	/* Headers hold credentials: no message shows a value, so the list's own parser checks them. */
	if (!cfg->headers_text && (v = otlp_env(getenv_fn, "HEADERS", NULL))) {
		if (keep(cfg, strdup(v)))
			return -ENOMEM;
		cfg->headers_text = cfg->owned[cfg->nowned - 1];
	}
	if (!!cfg->client_cert != !!cfg->client_key) {
		fprintf(err, "otelprofd: a client certificate needs its key and a key its certificate "
			"(--client-cert and --client-key)\n");
		return -EINVAL;
	}
	r = otel_parse_list(cfg->headers_text, &cfg->headers, &cfg->nheaders, list_why, sizeof(list_why));
	if (r) {
		fprintf(err, "otelprofd: %s: %s (expected key=value,key=value)\n", headers_from, list_why);
		return r;
	}
	for (size_t i = 0; i < cfg->nheaders; i++) {
		char key[72];

		for (char *k = cfg->headers[i].key; *k; k++)
			*k = (char)tolower((unsigned char)*k);
		if (header_ok(&cfg->headers[i], cfg->protocol == EXPORT_PROTOCOL_GRPC, &why))
			continue;
		fprintf(err, "otelprofd: %s: '%s' cannot be sent as a %s header: %s\n", headers_from,
			parse_escape(cfg->headers[i].key, key, sizeof(key)),
			cfg->protocol == EXPORT_PROTOCOL_GRPC ? "gRPC" : "HTTP", why);
		return -EINVAL;
	}
	/* The queue must hold at least one request of the largest size. */
	if (cfg->queue_bytes < cfg->max_message_size) {
		fprintf(err, "otelprofd: --queue-bytes (%zu) is smaller than --max-message-size (%zu): a request "
			"of the largest size could never be queued\n", cfg->queue_bytes, cfg->max_message_size);
		return -EINVAL;
	}
	if ((r = resource_attributes(cfg, getenv_fn, err)))
		return r;

	if (!endpoint) {
		endpoint = otlp_env(getenv_fn, "ENDPOINT", &specific);
		kind = specific ? ENDPOINT_AS_IS : ENDPOINT_BASE;
		endpoint_from = specific ? "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT";
	}
	if (!endpoint)
		return 0;
	r = resolve_endpoint(cfg, endpoint, kind, &why);
	if (r == -EINVAL)
		fprintf(err, "otelprofd: %s: '%s' is not a collector address: %s "
			"(examples: localhost:4317, https://collector:4318)\n", endpoint_from,
			parse_redact_url(endpoint, shown, sizeof(shown)), why);
	if (r)
		return r;
	cfg->enabled = true;
	return 0;
}

void export_config_free(struct export_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->url);
	free(cfg->target);
	free_pairs(cfg->headers, cfg->nheaders);
	for (size_t i = 0; i < cfg->nresource_attrs; i++) {
		free((char *)cfg->resource_attrs[i].key);
		free((char *)cfg->resource_attrs[i].value);
	}
	free(cfg->resource_attrs);
	for (size_t i = 0; i < cfg->nowned; i++)
		free(cfg->owned[i]);
	cfg->url = cfg->target = NULL;
	cfg->headers = NULL;
	cfg->resource_attrs = NULL;
	cfg->nheaders = cfg->nresource_attrs = cfg->nowned = 0;
}
