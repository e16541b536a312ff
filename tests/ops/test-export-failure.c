// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include <curl/curl.h>

#include "export/export_failure.h"

static char out[256];

/* gRPC core's details as the transport gets them (not NUL-terminated in real life: counted). */
static const char *grpc(int status, const char *details, uint64_t timeout_ns)
{
	export_describe_grpc_failure(status, details, strlen(details), timeout_ns, out, sizeof(out));
	return out;
}

static const char *curl(CURLcode code, long os_errno, const char *error)
{
	export_describe_curl_failure(code, os_errno, error, 2000000000ULL, out, sizeof(out));
	return out;
}

static void assert_starts(const char *s, const char *prefix)
{
	if (strncmp(s, prefix, strlen(prefix)))
		fail_msg("'%s' does not start with '%s'", s, prefix);
}

static void test_grpc(void **state)
{
	(void)state;
	assert_starts(grpc(14, "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:9: Failed to "
			       "connect to remote host: Connection refused", 1000000000ULL),
		      "connection refused (gRPC status 14: failed to connect");
	assert_string_equal(grpc(14, "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:9: Ssl "
				     "handshake failed: SSL_ERROR_SSL: error:0A00010B:SSL routines::wrong version number", 0),
			    "TLS handshake failed: SSL_ERROR_SSL: error:0A00010B:SSL routines::wrong version number "
			    "(no TLS on this port? --insecure)");
	assert_starts(grpc(14, "Ssl handshake failed: SSL_ERROR_SSL: error:1416F086:certificate verify failed", 0),
		      "TLS handshake failed: SSL_ERROR_SSL: error:1416F086:certificate verify failed");
	assert_starts(grpc(4, "Deadline Exceeded", 2500000000ULL), "timed out: no answer within 2.5 s (--timeout)");
	assert_starts(grpc(14, "last error: UNKNOWN: ipv4:127.0.0.1:9: tcp handshaker shutdown", 1000000000ULL),
		      "timed out");
	assert_starts(grpc(14, "last error: UNAVAILABLE: ipv4:127.0.0.1:9: Failed parsing HTTP/2", 0),
		      "the collector's answer is not gRPC over HTTP/2");
	assert_starts(grpc(14, "DNS resolution failed for nowhere.invalid:4317", 0),
		      "could not resolve the collector's name");
	assert_string_equal(grpc(7, "no\nway", 0), "gRPC status 7: no?way");
	assert_string_equal(grpc(2, "", 0), "gRPC status 2: ");
}

static void test_curl(void **state)
{
	const char *refused = "Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server";

	(void)state;
	assert_string_equal(curl(CURLE_COULDNT_CONNECT, ECONNREFUSED, refused),
			    "connection refused (Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server)");
	assert_starts(curl(CURLE_COULDNT_CONNECT, EHOSTUNREACH, refused), "could not connect: No route to host");
	assert_starts(curl(CURLE_OPERATION_TIMEDOUT, 0, "Operation timed out after 2001 milliseconds"),
		      "timed out: no answer within 2.0 s (--timeout) (Operation timed out");
	assert_string_equal(curl(CURLE_SSL_CONNECT_ERROR, 0, "OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number"),
			    "TLS handshake failed: OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number "
			    "(no TLS on this port? an http:// endpoint)");
	assert_starts(curl(CURLE_PEER_FAILED_VERIFICATION, 0, "SSL certificate problem: self-signed certificate"),
		      "TLS handshake failed: SSL certificate problem: self-signed certificate");
	assert_starts(curl(CURLE_WEIRD_SERVER_REPLY, 0, "Received HTTP/0.9 when not allowed"),
		      "the collector's answer is not HTTP (Received HTTP/0.9");
	assert_starts(curl(CURLE_GOT_NOTHING, 0, ""), "the collector closed the connection without an answer");
	assert_starts(curl(CURLE_COULDNT_RESOLVE_HOST, 0, "Could not resolve host: nowhere.invalid"),
		      "could not resolve the collector's name");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grpc),
		cmocka_unit_test(test_curl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
