/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libdebuginfod (Debian 12: libdebuginfod.so.1, package libdebuginfod1), loaded when debuginfod is
 * configured (DEBUGINFOD_URLS, debuginfo_fetch_new()) rather than linked: it brings libcurl and its
 * TLS libraries, megabytes of resident pages that other runs never use (dl_lib.h, docs/memory.md).
 */
#ifndef OTELPROF_DEBUGINFOD_LIB_H
#define OTELPROF_DEBUGINFOD_LIB_H

#include <stddef.h>

#include <elfutils/debuginfod.h>

#include "dl_lib.h"

#define DEBUGINFOD_LIB_SONAME "libdebuginfod.so.1"
#define DEBUGINFOD_LIB_PACKAGE "libdebuginfod1"

/* Every libdebuginfod entry point the symbolizer calls, each typed by its header. */
#define DEBUGINFOD_LIB_ENTRY_POINTS(X, api) \
	X(api, debuginfod_begin) \
	X(api, debuginfod_end) \
	X(api, debuginfod_find_debuginfo) \
	X(api, debuginfod_get_user_data) \
	X(api, debuginfod_set_progressfn) \
	X(api, debuginfod_set_user_data)

struct debuginfod_lib {
	DEBUGINFOD_LIB_ENTRY_POINTS(DL_LIB_FIELD, _)
};

/* Set by debuginfod_lib_load(); calls go through it: debuginfod_lib.debuginfod_begin(). */
extern struct debuginfod_lib debuginfod_lib;

/* Load libdebuginfod (once). 0, or -ELIBACC; debuginfod_lib_error() then says why. */
int debuginfod_lib_load(void);
/* "libdebuginfod1 (libdebuginfod.so.1): why" after a failed load, else NULL. */
const char *debuginfod_lib_error(void);

#endif
