// SPDX-License-Identifier: Apache-2.0
#include "export/export_failure.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "curl_lib.h"

/* Case-insensitive search in a counted string (gRPC's details are not NUL-terminated). */
static const char *find(const char *s, size_t len, const char *needle)
{
	size_t n = strlen(needle);

	for (size_t i = 0; i + n <= len; i++)
		if (!strncasecmp(s + i, needle, n))
			return s + i;
	return NULL;
}

/* Only printable ASCII reaches the log. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s >= 0x7f)
			*s = '?';
}

void export_describe_grpc_failure(int status, const char *details, size_t details_len, uint64_t timeout_ns,
				  char *out, size_t outlen)
{
	const char *tls = find(details, details_len, "handshake failed: ");
	int shown = details_len < 200 ? (int)details_len : 200;
	const char *plain_port_hint = "";

	/* gRPC core 1.51's words: "failed to connect to all addresses; last error: UNKNOWN:
	 * ipv4:127.0.0.1:4317: Failed to connect to remote host: Connection refused", "Ssl handshake
	 * failed: SSL_ERROR_SSL: ...", "tcp handshaker shutdown" (the call's deadline ended the attempt),
	 * "Failed parsing HTTP/2", "DNS resolution failed". */
	if (find(details, details_len, "Connection refused"))
		snprintf(out, outlen, "connection refused (gRPC status %d: %.*s)", status, shown, details);
	else if (tls && (find(details, details_len, "ssl") || find(details, details_len, "tls"))) {
		size_t off = (size_t)(tls - details) + strlen("handshake failed: ");
		int cause = details_len - off < 160 ? (int)(details_len - off) : 160;

		if (find(details, details_len, "wrong version number"))
			plain_port_hint = " (no TLS on this port? --insecure)";
		snprintf(out, outlen, "TLS handshake failed: %.*s%s", cause, details + off, plain_port_hint);
	} else if (find(details, details_len, "Handshake read failed"))
		snprintf(out, outlen, "TLS handshake failed: the collector closed the connection during the handshake "
			 "(gRPC status %d: %.*s)", status, shown, details);
	else if (status == 4 /* DEADLINE_EXCEEDED */ || find(details, details_len, "handshaker shutdown") ||
		   find(details, details_len, "timed out") || find(details, details_len, "timeout"))
		snprintf(out, outlen, "timed out: no answer within %.1f s (--timeout) (gRPC status %d: %.*s)",
			 timeout_ns / 1e9, status, shown, details);
	else if (find(details, details_len, "Failed parsing HTTP/2") || find(details, details_len, "Connection reset"))
		snprintf(out, outlen, "the collector's answer is not gRPC over HTTP/2 (gRPC status %d: %.*s)", status, shown,
			 details);
	else if (find(details, details_len, "DNS resolution failed"))
		snprintf(out, outlen, "could not resolve the collector's name (gRPC status %d: %.*s)", status, shown,
			 details);
	else
		snprintf(out, outlen, "gRPC status %d: %.*s", status, shown, details);
	sanitize(out);
}

void export_describe_curl_failure(int curl_code, long os_errno, const char *curl_error, uint64_t timeout_ns,
				  char *out, size_t outlen)
{
	/* libcurl is loaded when a failure comes from it; a caller that never loaded it gets the code. */
	char code[32];
	const char *said = curl_error;

	if (!*said && curl_lib_loaded()) {
		said = curl_lib.curl_easy_strerror((CURLcode)curl_code);
	} else if (!*said) {
		snprintf(code, sizeof(code), "libcurl error %d", curl_code);
		said = code;
	}

	switch ((CURLcode)curl_code) {
	case CURLE_COULDNT_CONNECT:
		if (os_errno == ECONNREFUSED)
			snprintf(out, outlen, "connection refused (%s)", said);
		else if (os_errno == ETIMEDOUT)
			snprintf(out, outlen, "timed out connecting (%s)", said);
		else
			snprintf(out, outlen, "could not connect: %s (%s)", os_errno ? strerror((int)os_errno) : "unknown error",
				 said);
		break;
	case CURLE_OPERATION_TIMEDOUT:
		snprintf(out, outlen, "timed out: no answer within %.1f s (--timeout) (%s)", timeout_ns / 1e9, said);
		break;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_USE_SSL_FAILED:
		snprintf(out, outlen, "TLS handshake failed: %s%s", said,
			 strstr(said, "wrong version number") ?
				 " (no TLS on this port? an http:// endpoint)" :
				 "");
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
		snprintf(out, outlen, "could not resolve the collector's name (%s)", said);
		break;
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_HTTP2:
	case CURLE_UNSUPPORTED_PROTOCOL:
		snprintf(out, outlen, "the collector's answer is not HTTP (%s)", said);
		break;
	case CURLE_GOT_NOTHING:
		snprintf(out, outlen, "the collector closed the connection without an answer (%s)", said);
		break;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
		snprintf(out, outlen, "the connection failed: %s (%s)", os_errno ? strerror((int)os_errno) : "network error",
			 said);
		break;
	default:
		snprintf(out, outlen, "%s", said);
		break;
	}
	sanitize(out);
}
