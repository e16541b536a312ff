/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gRPC core (Debian 12: libgrpc.so.29, package libgrpc29), loaded when the run first sends a request
 * over OTLP/gRPC (export_grpc.c) rather than linked: a run that writes a file, exports over HTTP or
 * has had nothing to send yet pays none of its 10 MiB of resident pages and 60 libraries
 * (symbolizer/dl_lib.h, docs/memory.md).
 * The gpr_* entry points live in libgpr.so.29, a dependency of libgrpc, and are found through it.
 * May include: nothing of the daemon.
 */
#ifndef OTELPROFD_EXPORT_GRPC_LIB_H
#define OTELPROFD_EXPORT_GRPC_LIB_H

#include <stdbool.h>
#include <stddef.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "dl_lib.h"

#define GRPC_LIB_SONAME "libgrpc.so.29"
#define GRPC_LIB_PACKAGE "libgrpc29"

/* Every gRPC entry point the daemon calls, each typed by gRPC's header. */
#define GRPC_LIB_ENTRY_POINTS(X, api) \
	X(api, gpr_free) \
	X(api, gpr_inf_future) \
	X(api, gpr_now) \
	X(api, gpr_time_add) \
	X(api, gpr_time_cmp) \
	X(api, gpr_time_from_nanos) \
	X(api, gpr_time_from_seconds) \
	X(api, grpc_byte_buffer_destroy) \
	X(api, grpc_byte_buffer_reader_destroy) \
	X(api, grpc_byte_buffer_reader_init) \
	X(api, grpc_byte_buffer_reader_readall) \
	X(api, grpc_call_cancel) \
	X(api, grpc_call_start_batch) \
	X(api, grpc_call_unref) \
	X(api, grpc_channel_check_connectivity_state) \
	X(api, grpc_channel_create) \
	X(api, grpc_channel_create_call) \
	X(api, grpc_channel_credentials_release) \
	X(api, grpc_channel_destroy) \
	X(api, grpc_channel_watch_connectivity_state) \
	X(api, grpc_completion_queue_create_for_pluck) \
	X(api, grpc_completion_queue_destroy) \
	X(api, grpc_completion_queue_pluck) \
	X(api, grpc_completion_queue_shutdown) \
	X(api, grpc_empty_slice) \
	X(api, grpc_init) \
	X(api, grpc_insecure_credentials_create) \
	X(api, grpc_metadata_array_destroy) \
	X(api, grpc_metadata_array_init) \
	X(api, grpc_raw_byte_buffer_create) \
	X(api, grpc_shutdown) \
	X(api, grpc_slice_from_copied_buffer) \
	X(api, grpc_slice_from_copied_string) \
	X(api, grpc_slice_from_static_string) \
	X(api, grpc_slice_unref) \
	X(api, grpc_ssl_credentials_create)

struct grpc_lib {
	GRPC_LIB_ENTRY_POINTS(DL_LIB_FIELD, _)
};

/* Set by grpc_lib_load(); calls go through it: grpc_lib.grpc_init(). */
extern struct grpc_lib grpc_lib;

/* Load gRPC (once). 0, or -ELIBACC with "libgrpc29 (libgrpc.so.29): why" in why. */
int grpc_lib_load(char *why, size_t why_size);
/* Whether libgrpc.so.29 is found, without loading it (dl_lib_present()). */
bool grpc_lib_present(void);

#endif
