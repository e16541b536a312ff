// SPDX-License-Identifier: Apache-2.0
#include "ops/service_notify.h"

#include <stdbool.h>
#include <systemd/sd-daemon.h>

static uint64_t last_ping_ns;

void service_notify_ready(const char *status)
{
	sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void service_notify_watchdog(uint64_t now_ns)
{
	static bool checked;
	static uint64_t interval_ns; /* 0: no watchdog */
	uint64_t usec;

	if (!checked) {
		checked = true;
		if (sd_watchdog_enabled(0, &usec) > 0)
			interval_ns = usec * 1000 / 2;
	}
	if (!interval_ns || now_ns - last_ping_ns < interval_ns)
		return;
	last_ping_ns = now_ns;
	sd_notify(0, "WATCHDOG=1");
}

void service_notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}
