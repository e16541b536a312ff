/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What went wrong with a send, in words a user acts on: "connection refused", "timed out after 2.0 s",
 * "TLS handshake failed: <the library's cause>", "the answer is not gRPC"..., followed by what the
 * transport library said. Pure functions on the libraries' outcomes, so they are tested without a network.
 */
#ifndef OTELPROFD_EXPORT_FAILURE_H
#define OTELPROFD_EXPORT_FAILURE_H

#include <stddef.h>
#include <stdint.h>

/* A failed gRPC call: its status code and details (the transport error when there is no answer). */
void export_describe_grpc_failure(int status, const char *details, size_t details_len, uint64_t timeout_ns,
				  char *out, size_t outlen);
/* A failed curl_easy_perform(): its CURLcode, CURLINFO_OS_ERRNO and error buffer (may be ""). */
void export_describe_curl_failure(int curl_code, long os_errno, const char *curl_error, uint64_t timeout_ns,
				  char *out, size_t outlen);

#endif
