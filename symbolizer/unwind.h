/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A DWARF CFI stack walker over a copied window of a thread's user stack (x86-64), the technique of
 * `perf --call-graph dwarf`: start from the sampled ip, sp and bp, find each frame's compiled CFI
 * rule (struct cfi_rule) through a callback, compute the caller's registers reading saved values
 * from the window only, and fall back to the frame-pointer convention for a frame no CFI covers.
 * It never touches the live process and never allocates.
 *
 * Every walk is bounded: at most `max` frames, at most CFI_MAX_OPS operations per expression, an
 * evaluation stack of UNWIND_EXPR_STACK entries, and the stack pointer must grow at every frame, so
 * looping CFI or garbage on the stack ends the walk with a reason instead of spinning.
 */
#ifndef OTELPROF_UNWIND_H
#define OTELPROF_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi.h"

#define UNWIND_EXPR_STACK 8

struct unwind_regs {
	uint64_t ip, sp, bp;
};

/* The copied stack: data holds the bytes at [sp, sp + size) of the process. */
struct unwind_window {
	uint64_t sp;
	const uint8_t *data;
	size_t size;
	bool complete; /* the copy ended where the stack's mapping did (fewer bytes than asked) */
};

/* Why a walk ended. */
enum unwind_end {
	UNWIND_END_ENTRY = 0,   /* the outermost frame: CFI says the return address is undefined, or a
				   frame-pointer chain ended with bp == 0 */
	UNWIND_END_TRUNCATED,   /* a saved value lies beyond the copied window, which was cut by the
				   copy size (the stack goes on) */
	UNWIND_END_DEPTH,       /* max frames reached */
	UNWIND_END_NO_RULE,     /* no CFI and no usable frame pointer for a frame */
	UNWIND_END_BAD_READ,    /* a saved value lies outside the window (below sp, or past the end of a
				   stack that ended inside the window): garbage */
	UNWIND_END_NOT_GROWING, /* the caller's sp is not above the callee's: looping or garbage CFI */
	UNWIND_END_BAD_EXPR,    /* an expression uses an unknown register or operation, or overflows */
	UNWIND_END_BAD_IP,      /* a return address of 0 or in the kernel half */
	UNWIND_END_MAX,
};

/*
 * Find the rule of pc (a runtime address of the process): return it, or NULL when no CFI covers pc
 * (the walker then tries frame pointers). The rule must stay valid until the next call.
 */
typedef const struct cfi_rule *(*unwind_rule_fn)(void *ctx, uint64_t pc);

struct unwind_result {
	size_t n;              /* ips filled: ips[0] is regs->ip, then return addresses, leaf first */
	enum unwind_end end;
	unsigned cfi_frames;   /* frames stepped with CFI */
	unsigned go_sp_frames; /* frames stepped with a rule from Go's SP-delta table (not in cfi_frames) */
	unsigned fp_frames;    /* frames stepped with frame pointers */
	uint64_t top;          /* UNWIND_END_ENTRY by CFI (the return address undefined): the stack's
				  last address the walk needed, the outermost frame's CFA: the bytes
				  above it are not needed to unwind this thread; else 0 */
};

/* Walk the stack into ips[0 .. max). Always fills *result; returns result->n. */
size_t unwind_stack(const struct unwind_regs *regs, const struct unwind_window *window, unwind_rule_fn find_rule,
		    void *ctx, uint64_t *ips, size_t max, struct unwind_result *result);

/* A short name of an end reason ("entry", "truncated", ...), for counters and tests. */
const char *unwind_end_name(enum unwind_end end);

#endif
