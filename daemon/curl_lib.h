/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl (Debian 12: libcurl.so.4, package libcurl4), loaded when the run first needs it (OTLP over
 * HTTP: export_http_new(); Kubernetes pod metadata: k8s_start()) rather than linked: other runs pay
 * none of its resident pages and libraries (symbolizer/dl_lib.h, docs/memory.md).
 * May include: nothing of the daemon (any folder may include this one).
 */
#ifndef OTELPROFD_CURL_LIB_H
#define OTELPROFD_CURL_LIB_H

#include <stdbool.h>
#include <stddef.h>

/* curl's gcc type checks are macros named as its functions (curl_easy_setopt(h, o, v)): they
 * would expand inside curl_lib.curl_easy_setopt(...), so they are off where this header is used. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include "dl_lib.h"

#define CURL_LIB_SONAME "libcurl.so.4"
#define CURL_LIB_PACKAGE "libcurl4"

/* Every libcurl entry point the daemon calls, each typed by curl's header. */
#define CURL_LIB_ENTRY_POINTS(X, api) \
	X(api, curl_easy_cleanup) \
	X(api, curl_easy_escape) \
	X(api, curl_easy_getinfo) \
	X(api, curl_easy_init) \
	X(api, curl_easy_perform) \
	X(api, curl_easy_setopt) \
	X(api, curl_easy_strerror) \
	X(api, curl_free) \
	X(api, curl_getdate) \
	X(api, curl_global_cleanup) \
	X(api, curl_global_init) \
	X(api, curl_slist_append) \
	X(api, curl_slist_free_all)

struct curl_lib {
	CURL_LIB_ENTRY_POINTS(DL_LIB_FIELD, _)
};

/* Set by curl_lib_load(); calls go through it: curl_lib.curl_easy_init(). */
extern struct curl_lib curl_lib;

/* Load libcurl (once). 0, or -ELIBACC with "libcurl4 (libcurl.so.4): why" in why. */
int curl_lib_load(char *why, size_t why_size);
/* Whether an earlier curl_lib_load() succeeded (loads nothing). */
bool curl_lib_loaded(void);

#endif
