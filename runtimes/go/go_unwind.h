/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Go frames without CFI: Go binaries carry no .eh_frame, and a stripped one (-ldflags='-s -w') no
 * .debug_frame either, but every Go function has the SP-delta table (pcsp) that Go's own traceback
 * steps with. This turns it into the CFI rule the copied-stack unwinder (symbolizer/unwind.h)
 * evaluates, so a frameless leaf keeps its caller:
 *   CFA = sp + delta + 8, the return address at CFA - 8, the caller's sp = CFA, and the caller's
 *   bp saved at CFA - 16 once the function has a frame (delta > 0; Go saves it at the top of
 *   every frame), unchanged otherwise.
 * Where Go's traceback stops, the walk stops, as complete: top frames (runtime.goexit, mstart,
 * rt0_go) and stack switches (systemstack, mcall, morestack, asmcgocall, gogo, the signal
 * trampolines), whose callers are on another stack than the copied one.
 */
#ifndef OTELPROFD_GO_UNWIND_H
#define OTELPROFD_GO_UNWIND_H

#include <stdint.h>

#include "cfi.h"
#include "gopclntab.h"

enum go_unwind_kind {
	GO_UNWIND_NONE = 0, /* not Go text, or its pcsp table is malformed: no rule */
	GO_UNWIND_STEP,     /* *rule steps to the caller */
	GO_UNWIND_TOP,      /* *rule ends the walk: the top of a goroutine's or a thread's stack */
	GO_UNWIND_SWITCH,   /* *rule ends the walk: the callers are on another stack */
};

/* The rule of pc (an address of t's text) into *rule; *rule is untouched for GO_UNWIND_NONE. */
enum go_unwind_kind go_unwind_rule(const struct gopclntab *t, uint64_t pc, struct cfi_rule *rule);

/* A rule that ends the walk at its frame: CFA = sp, the return address undefined. */
void go_unwind_stop_rule(struct cfi_rule *rule);

#endif
