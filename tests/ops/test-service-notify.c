// SPDX-License-Identifier: Apache-2.0
/* systemd's notification protocol as ops/service_notify.c speaks it: datagrams to $NOTIFY_SOCKET
 * (a path or an abstract "@name"), the watchdog's interval from $WATCHDOG_USEC when $WATCHDOG_PID is
 * unset or ours, nothing at all without $NOTIFY_SOCKET. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ops/service_notify.h"

#define SEC 1000000000ULL

/* A datagram socket bound at name (a path, or "@name" for an abstract one), non-blocking. */
static int listen_at(const char *name)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	size_t len = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	memcpy(addr.sun_path, name, len);
	if (name[0] == '@')
		addr.sun_path[0] = 0;
	else
		unlink(name);
	assert_int_equal(bind(fd, (struct sockaddr *)&addr, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)), 0);
	assert_int_equal(setenv("NOTIFY_SOCKET", name, 1), 0);
	return fd;
}

/* The next datagram, or "" when none waits. */
static const char *next(int fd)
{
	static char buf[1024];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);

	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static void test_ready_and_stopping_to_a_path(void **state)
{
	char path[64];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/test-service-notify-%d", (int)getpid());
	fd = listen_at(path);
	service_notify_ready("Sampling");
	assert_string_equal(next(fd), "READY=1\nSTATUS=Sampling");
	service_notify_stopping();
	assert_string_equal(next(fd), "STOPPING=1");
	assert_string_equal(next(fd), "");
	close(fd);
	unlink(path);
}

static void test_abstract_socket(void **state)
{
	char name[64];
	int fd;

	(void)state;
	snprintf(name, sizeof(name), "@test-service-notify-%d", (int)getpid());
	fd = listen_at(name);
	service_notify_ready("x");
	assert_string_equal(next(fd), "READY=1\nSTATUS=x");
	close(fd);
}

static void test_no_socket_sends_nothing(void **state)
{
	(void)state;
	unsetenv("NOTIFY_SOCKET");
	service_notify_ready("nowhere"); /* nothing to check but that it returns */
	service_notify_stopping();
	assert_int_equal(setenv("NOTIFY_SOCKET", "relative/path", 1), 0);
	service_notify_stopping(); /* not an address systemd gives: ignored */
	unsetenv("NOTIFY_SOCKET");
}

/* The watchdog's settings are read once per process: one test. */
static void test_watchdog_pings_at_half_its_interval(void **state)
{
	char name[64], pid[16];
	int fd;

	(void)state;
	snprintf(name, sizeof(name), "@test-service-notify-wd-%d", (int)getpid());
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	fd = listen_at(name);
	setenv("WATCHDOG_USEC", "2000000", 1);
	setenv("WATCHDOG_PID", pid, 1);
	service_notify_watchdog(10 * SEC);
	assert_string_equal(next(fd), "WATCHDOG=1");
	service_notify_watchdog(10 * SEC + SEC / 2);
	assert_string_equal(next(fd), "");
	service_notify_watchdog(11 * SEC);
	assert_string_equal(next(fd), "WATCHDOG=1");
	close(fd);
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ready_and_stopping_to_a_path),
		cmocka_unit_test(test_abstract_socket),
		cmocka_unit_test(test_no_socket_sends_nothing),
		cmocka_unit_test(test_watchdog_pings_at_half_its_interval),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
