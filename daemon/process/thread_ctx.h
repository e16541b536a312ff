/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the threads of a process keep their OTEP 4947 thread context: the ELF TLS variable
 * otel_thread_ctx_v1, exported in the .dynsym of the executable or of a loaded library, resolved to
 * what the BPF program needs to reach it from a thread's thread pointer (struct otelprof_trace_proc).
 *
 * x86-64 glibc (TLS variant II). Three cases, as OTEP 4947 asks:
 *   the executable (local or initial exec): a static offset from the thread pointer, from its
 *     PT_TLS segment (glibc places the executable's block first, right below the thread pointer);
 *   a library in the static TLS block (loaded at start; TLSDESC, initial-exec or legacy
 *     general-dynamic relocations): the offset its relocated GOT entry holds in the process;
 *   a library in dynamic TLS (dlopen): its module id and offset, from its GOT entry (legacy
 *     general-dynamic) or its TLS descriptor's argument (TLSDESC), read through the thread's DTV.
 *
 * Binaries are opened through /proc/PID/map_files (never by a path a container could redirect) and
 * parsed with libelf, bounded: at most THREAD_CTX_MAX_MODULES files, symbol and relocation tables
 * of at most THREAD_CTX_MAX_ENTRIES entries. Nothing is kept open.
 */
#ifndef OTELPROFD_THREAD_CTX_H
#define OTELPROFD_THREAD_CTX_H

#include <stdint.h>

#include "records.h"

#define THREAD_CTX_MAX_MODULES 512
#define THREAD_CTX_MAX_ENTRIES (1u << 20)
#define THREAD_CTX_SYMBOL "otel_thread_ctx_v1"

/*
 * Resolve pid's variable into *out (start_ns left to the caller). 0, -ENOENT (no module defines it,
 * or its relocation is not applied yet), -ENOTSUP (not x86-64 ELF, or no relocation this reader
 * knows), or the -errno of reading /proc or the memory.
 */
int thread_ctx_resolve(const char *proc_root, uint32_t pid, struct otelprof_trace_proc *out);

#endif
