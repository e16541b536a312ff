// SPDX-License-Identifier: Apache-2.0
/*
 * OTLP over HTTP with libcurl: POST the request to the profiles URL as application/x-protobuf,
 * gzipped (Content-Encoding: gzip) unless compression is off. One easy handle, reused so the
 * connection stays open between intervals.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zlib.h>

#include "curl_lib.h"
#include "dl_lib.h"
#include "export/export_failure.h"
#include "export/export_transport.h"

/* Bound on the body of an answer kept for decoding. */
#define MAX_RESPONSE_BYTES (64u << 10)

struct http_transport {
	struct export_transport base;
	CURL *curl;
	struct curl_slist *headers;
	bool gzip;
	char *url;
	uint8_t *zbuf; /* gzip output, reused */
	size_t zcap;
};

struct response {
	uint8_t *body;
	size_t len;
	uint64_t retry_after_ns;
	bool protobuf; /* Content-Type: application/x-protobuf */
};

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	struct response *r = ctx;
	size_t len = size * n, room = MAX_RESPONSE_BYTES - r->len;
	uint8_t *grown;

	if (len > room)
		len = room; /* keep the start; the rest is read and dropped */
	if (len) {
		grown = realloc(r->body, r->len + len);
		if (!grown)
			return size * n;
		r->body = grown;
		memcpy(r->body + r->len, data, len);
		r->len += len;
	}
	return size * n;
}

/* Retry-After: delta-seconds or an HTTP date. */
static uint64_t parse_retry_after(const char *value)
{
	char *end;
	unsigned long s;
	time_t when;

	while (*value == ' ')
		value++;
	if (isdigit((unsigned char)*value)) {
		s = strtoul(value, &end, 10);
		return s > 86400 ? 86400ULL * 1000000000ULL : (uint64_t)s * 1000000000ULL;
	}
	when = curl_lib.curl_getdate(value, NULL);
	if (when <= 0)
		return 0;
	return when > time(NULL) ? (uint64_t)(when - time(NULL)) * 1000000000ULL : 0;
}

static size_t on_header(char *data, size_t size, size_t n, void *ctx)
{
	struct response *r = ctx;
	size_t len = size * n;
	char line[256];

	if (len >= sizeof(line))
		return len;
	memcpy(line, data, len);
	line[len] = 0;
	line[strcspn(line, "\r\n")] = 0;
	if (!strncasecmp(line, "Retry-After:", 12))
		r->retry_after_ns = parse_retry_after(line + 12);
	else if (!strncasecmp(line, "Content-Type:", 13))
		r->protobuf = strstr(line + 13, "application/x-protobuf") != NULL;
	return len;
}

/* gzip data into t->zbuf; the compressed length, or 0 on failure. */
static size_t gzip_into(struct http_transport *t, const uint8_t *data, size_t len)
{
	z_stream zs = { 0 };
	size_t bound;
	int r;

	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return 0;
	bound = deflateBound(&zs, len) + 32;
	if (bound > t->zcap) {
		uint8_t *grown = realloc(t->zbuf, bound);

		if (!grown) {
			deflateEnd(&zs);
			return 0;
		}
		t->zbuf = grown;
		t->zcap = bound;
	}
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)len;
	zs.next_out = t->zbuf;
	zs.avail_out = (uInt)t->zcap;
	r = deflate(&zs, Z_FINISH);
	len = zs.total_out;
	deflateEnd(&zs);
	return r == Z_STREAM_END ? len : 0;
}

enum export_outcome export_http_classify(long status)
{
	if (status >= 200 && status < 300)
		return EXPORT_OK;
	return status == 429 || status == 502 || status == 503 || status == 504 ? EXPORT_RETRYABLE : EXPORT_PERMANENT;
}

static int http_send(struct export_transport *base, const uint8_t *data, size_t len, uint64_t timeout_ns,
		     struct export_result *res)
{
	struct http_transport *t = (struct http_transport *)base;
	struct response resp = { 0 };
	char curl_error[CURL_ERROR_SIZE] = "";
	const uint8_t *body = data;
	size_t body_len = len;
	long status = 0;
	CURLcode cr;

	memset(res, 0, sizeof(*res));
	if (t->gzip) {
		body_len = gzip_into(t, data, len);
		if (!body_len) {
			res->outcome = EXPORT_PERMANENT;
			snprintf(res->message, sizeof(res->message), "gzip failed");
			return 0;
		}
		body = t->zbuf;
	}
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_POSTFIELDS, body);
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_TIMEOUT_MS, (long)(timeout_ns / 1000000 ? timeout_ns / 1000000 : 1));
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_WRITEDATA, &resp);
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_HEADERDATA, &resp);
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_ERRORBUFFER, curl_error);
	cr = curl_lib.curl_easy_perform(t->curl);
	if (cr != CURLE_OK) {
		/* No answer (refused, reset, timeout, TLS): the collector may come back. */
		res->outcome = EXPORT_RETRYABLE;
		long os_errno = 0;

		curl_lib.curl_easy_getinfo(t->curl, CURLINFO_OS_ERRNO, &os_errno);
		export_describe_curl_failure(cr, os_errno, curl_error, timeout_ns, res->message, sizeof(res->message));
		goto out;
	}
	curl_lib.curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
	res->code = (int)status;
	res->outcome = export_http_classify(status);
	if (res->outcome == EXPORT_OK) {
		if (resp.len && !export_parse_response(resp.body, resp.len, &res->rejected, res->message,
						       sizeof(res->message)))
			snprintf(res->message, sizeof(res->message), "undecodable ExportProfilesServiceResponse");
		goto out;
	}
	res->retry_after_ns = resp.retry_after_ns;
	/* The body of an error is a google.rpc.Status when it is protobuf; otherwise show its start. */
	{
		char message[200] = "";
		uint64_t ignored;

		if (resp.len && resp.protobuf)
			export_parse_rpc_status(resp.body, resp.len, message, sizeof(message), &ignored, NULL);
		if (!*message && resp.len) {
			size_t n = resp.len < sizeof(message) - 1 ? resp.len : sizeof(message) - 1;

			for (size_t i = 0; i < n; i++)
				message[i] = (resp.body[i] >= 0x20 && resp.body[i] < 0x7f) ? (char)resp.body[i] : ' ';
			message[n] = 0;
		}
		snprintf(res->message, sizeof(res->message), "HTTP %ld%s%s", status, *message ? ": " : "", message);
	}
out:
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_ERRORBUFFER, NULL);
	free(resp.body);
	return 0;
}

static void http_transport_free(struct export_transport *base)
{
	struct http_transport *t = (struct http_transport *)base;

	if (!t)
		return;
	if (t->curl)
		curl_lib.curl_easy_cleanup(t->curl);
	curl_lib.curl_slist_free_all(t->headers);
	free(t->url);
	free(t->zbuf);
	free(t);
}

/* Append the header "a" (b NULL) or "a: b". */
static bool add_header(struct http_transport *t, const char *a, const char *b)
{
	char line[1024];
	struct curl_slist *l;

	if (snprintf(line, sizeof(line), "%s%s%s", a, b ? ": " : "", b ? b : "") >= (int)sizeof(line))
		return false;
	l = curl_lib.curl_slist_append(t->headers, line);
	if (!l)
		return false;
	t->headers = l;
	return true;
}

struct export_transport *export_http_new(const struct export_config *cfg, int *err, char *errbuf, size_t errlen)
{
	struct http_transport *t;
	static bool initialised;

	char why[DL_LIB_ERROR_MAX];

	/* Loaded here, at the run's first use: other runs never map it (docs/memory.md). */
	if (curl_lib_load(why, sizeof(why))) {
		*err = -ELIBACC;
		snprintf(errbuf, errlen, "OTLP over HTTP needs %s", why);
		return NULL;
	}
	if (!initialised) {
		/* The daemon starts one exporter, before any other thread uses curl. */
		if (curl_lib.curl_global_init(CURL_GLOBAL_DEFAULT)) {
			*err = -EINVAL;
			snprintf(errbuf, errlen, "Failed to initialise libcurl");
			return NULL;
		}
		initialised = true;
	}
	t = calloc(1, sizeof(*t));
	if (!t || !(t->url = strdup(cfg->url)) || !(t->curl = curl_lib.curl_easy_init())) {
		*err = -ENOMEM;
		snprintf(errbuf, errlen, "Out of memory");
		http_transport_free(t ? &t->base : NULL);
		return NULL;
	}
	t->base.send = http_send;
	t->base.free = http_transport_free;
	t->base.name = "http";
	t->gzip = cfg->compression == EXPORT_COMPRESSION_GZIP;
	if (!add_header(t, "Content-Type: application/x-protobuf", NULL) || !add_header(t, "Expect:", NULL) ||
	    (t->gzip && !add_header(t, "Content-Encoding: gzip", NULL)))
		goto bad_header;
	for (size_t i = 0; i < cfg->nheaders; i++)
		if (strpbrk(cfg->headers[i].value, "\r\n") ||
		    !add_header(t, cfg->headers[i].key, cfg->headers[i].value))
			goto bad_header;

	curl_lib.curl_easy_setopt(t->curl, CURLOPT_URL, t->url);
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_POST, 1L);
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_HTTPHEADER, t->headers);
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_USERAGENT, "otelprofd/" OTELPROFD_VERSION);
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_NOSIGNAL, 1L);
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_lib.curl_easy_setopt(t->curl, CURLOPT_HEADERFUNCTION, on_header);
	if (cfg->ca_file)
		curl_lib.curl_easy_setopt(t->curl, CURLOPT_CAINFO, cfg->ca_file);
	if (cfg->client_cert) {
		curl_lib.curl_easy_setopt(t->curl, CURLOPT_SSLCERT, cfg->client_cert);
		curl_lib.curl_easy_setopt(t->curl, CURLOPT_SSLKEY, cfg->client_key);
	}
	return &t->base;

bad_header:
	*err = -EINVAL;
	snprintf(errbuf, errlen, "A header is too long or holds a line break");
	http_transport_free(&t->base);
	return NULL;
}
