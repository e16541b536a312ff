// SPDX-License-Identifier: Apache-2.0
/*
 * The OTEP 4947 thread-local variable and its one writer, built into the test application (the
 * executable case), into a library linked at start (TLSDESC) and into one it dlopens (legacy
 * general dynamic): see meson.build.
 */
#include <stdatomic.h>

__attribute__((visibility("default"))) __thread void *otel_thread_ctx_v1;

/* Attach (a record) or detach (NULL): a compiler fence keeps the record's writes before it. */
__attribute__((visibility("default"))) void otel_ctx_set(void *record)
{
	atomic_signal_fence(memory_order_seq_cst);
	*(void *volatile *)&otel_thread_ctx_v1 = record;
	atomic_signal_fence(memory_order_seq_cst);
}
