/* SPDX-License-Identifier: Apache-2.0 */
/*
 * systemd integration: readiness, watchdog pings and stopping, by systemd's notification protocol
 * (sd_notify(3), spoken directly: no libsystemd). Every call is
 * a no-op when otelprofd does not run under systemd (no NOTIFY_SOCKET).
 */
#ifndef OTELPROFD_SERVICE_NOTIFY_H
#define OTELPROFD_SERVICE_NOTIFY_H

#include <stdint.h>

/* Sampling works: tell systemd (Type=notify) we are ready. */
void service_notify_ready(const char *status);
/* Call from the main loop at least once a second: pings the watchdog at half its interval. */
void service_notify_watchdog(uint64_t now_monotonic_ns);
void service_notify_stopping(void);

#endif
