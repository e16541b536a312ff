/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The signals the daemon handles, read by the event loop from a signalfd: INT and TERM end the run;
 * HUP, USR1 and USR2 do not (what each does: main.c's on_signal(), the man page's SIGNALS).
 */
#ifndef OTELPROFD_SIGNALS_H
#define OTELPROFD_SIGNALS_H

#include <signal.h>

/* The set the signalfd reads. */
void signals_handled(sigset_t *mask);
/* Blocks that set, and ignores SIGPIPE, in the calling thread: call it before the first thread starts,
 * so every thread inherits the mask. 0 or -errno. */
int signals_block(void);

#endif
