// SPDX-License-Identifier: Apache-2.0
#include "ops/signals.h"

#include "clock.h"
#include "log.h"
#include "ops/self_report.h"

#include <errno.h>
#include <string.h>

void signals_handled(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGHUP);
	sigaddset(mask, SIGUSR1);
	sigaddset(mask, SIGUSR2);
}

/* A thread without the mask would take a signal's default action: for SIGHUP and SIGUSR1, end the
 * process with nothing written. */
int signals_block(void)
{
	sigset_t mask;

	signals_handled(&mask);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

bool signals_act(uint32_t signo, struct self_report *report, const struct self_sources *src)
{
	struct self_metrics m;

	switch (signo) {
	case SIGHUP:
		/* The unit has no ExecReload=: only a user sends it, and learns what to do instead. */
		log_info("Received SIGHUP: ignored; the configuration is read at start, restart to apply a new one");
		return false;
	case SIGUSR1:
		self_report_collect(src, &m);
		/* Readiness is judged once a second by the loop's tick: its last word. */
		m.ready = report->now.ready;
		memcpy(m.not_ready_reason, report->now.not_ready_reason, sizeof(m.not_ready_reason));
		self_report_log_summary(report, &m, clock_ns(CLOCK_MONOTONIC), "SIGUSR1: ");
		return false;
	case SIGUSR2:
		log_info("Received SIGUSR2: ignored");
		return false;
	default:
		log_info("Received %s, writing what was collected", signo == SIGINT ? "SIGINT" : "SIGTERM");
		return true;
	}
}
