/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The signals the daemon handles, read by the event loop from a signalfd: INT and TERM end the run;
 * HUP, USR1 and USR2 do not (what each does: signals_act(), the man page's SIGNALS).
 */
#ifndef OTELPROFD_SIGNALS_H
#define OTELPROFD_SIGNALS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct self_report;
struct self_sources;

/* The set the signalfd reads. */
void signals_handled(sigset_t *mask);
/* Blocks that set, and ignores SIGPIPE, in the calling thread: call it before the first thread starts,
 * so every thread inherits the mask. 0 or -errno. */
int signals_block(void);
/* What signal signo, read from the signalfd, does: logs it, or SIGUSR1's summary of src's counters
 * (with report's last readiness, and as the base of the next summary). True when it ends the run. */
bool signals_act(uint32_t signo, struct self_report *report, const struct self_sources *src);

#endif
