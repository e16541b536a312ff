// SPDX-License-Identifier: Apache-2.0
#include "ops/signals.h"

#include <errno.h>

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
