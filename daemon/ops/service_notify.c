// SPDX-License-Identifier: Apache-2.0
/*
 * systemd's notification protocol spoken directly (a datagram of "KEY=value" lines to the socket
 * named by $NOTIFY_SOCKET, as sd_notify(3) and systemd's "Interface Portability and Stability"
 * document it) rather than through libsystemd: linking that library cost every run 0.8 MiB of
 * resident memory and its relocations at start for three short messages (docs/memory.md).
 */
#include "ops/service_notify.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static uint64_t last_ping_ns;

/* Send text to $NOTIFY_SOCKET: 0, or -errno (nothing is sent without NOTIFY_SOCKET: 0 too). */
static int notify(const char *text)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	size_t len;
	ssize_t sent;
	int fd;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	/* A path, or an abstract socket written "@name" (its first byte is then 0). */
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(addr.sun_path))
		return -EAFNOSUPPORT;
	memcpy(addr.sun_path, path, len);
	if (path[0] == '@')
		addr.sun_path[0] = 0;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sent = sendto(fd, text, strlen(text), MSG_NOSIGNAL, (struct sockaddr *)&addr,
		      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
	close(fd);
	return sent < 0 ? -errno : 0;
}

/* The watchdog's interval in microseconds ($WATCHDOG_USEC, when $WATCHDOG_PID is unset or ours), or 0. */
static uint64_t watchdog_usec(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	unsigned long long v;
	char *end;

	if (!usec || !*usec)
		return 0;
	if (pid && *pid) {
		errno = 0;
		v = strtoull(pid, &end, 10);
		if (errno || *end || v != (unsigned long long)getpid())
			return 0;
	}
	errno = 0;
	v = strtoull(usec, &end, 10);
	return errno || *end ? 0 : (uint64_t)v;
}

void service_notify_ready(const char *status)
{
	char text[512];

	snprintf(text, sizeof(text), "READY=1\nSTATUS=%s", status);
	notify(text);
}

void service_notify_watchdog(uint64_t now_ns)
{
	static bool checked;
	static uint64_t interval_ns; /* 0: no watchdog */

	if (!checked) {
		checked = true;
		interval_ns = watchdog_usec() * 1000 / 2;
	}
	if (!interval_ns || now_ns - last_ping_ns < interval_ns)
		return;
	last_ping_ns = now_ns;
	notify("WATCHDOG=1");
}

void service_notify_stopping(void)
{
	notify("STOPPING=1");
}
