// SPDX-License-Identifier: Apache-2.0
/* The metrics server's answers (ops/metrics_server.c) on a loopback port: 503 until the first
 * snapshot, then the snapshot; /ready with its reason. Connection bounds and slow clients are
 * tested against the real daemon by integration/test_metrics.py. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ops/metrics_server.h"

/* GET path from the server; the whole answer (status line, headers, body) in buf. */
static void get(int port, const char *path, char *buf, size_t cap)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t got = 0;
	ssize_t n;

	assert_true(fd >= 0);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	dprintf(fd, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	while (got + 1 < cap && (n = read(fd, buf + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = 0;
	close(fd);
}

/* A loopback port free a moment ago (the server refuses port 0). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void test_starting_then_snapshot(void **state)
{
	const char *text = "otelprofd_build_info{revision=\"x\"} 1\n";
	struct metrics_server *s;
	char buf[4096], address[32];

	(void)state;
	snprintf(address, sizeof(address), "127.0.0.1:%d", free_port());
	s = metrics_server_start(address);
	assert_non_null(s);
	/* Before the first snapshot: never the server's own counters alone, which would read as
	 * every other series gone. */
	get(metrics_server_port(s), "/metrics", buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 503 "));
	assert_non_null(strstr(buf, "starting"));
	assert_null(strstr(buf, "otelprofd_metrics_connections_dropped_total"));
	get(metrics_server_port(s), "/ready", buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 503 "));
	assert_non_null(strstr(buf, "not ready: starting"));

	metrics_server_publish(s, text, strlen(text), false, "no perf event while the CPUs ran 5.0 s");
	get(metrics_server_port(s), "/metrics", buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 200 "));
	assert_non_null(strstr(buf, text));
	assert_non_null(strstr(buf, "otelprofd_metrics_connections_dropped_total"));
	get(metrics_server_port(s), "/ready", buf, sizeof(buf));
	assert_non_null(strstr(buf, "not ready: no perf event"));

	metrics_server_publish(s, text, strlen(text), true, "");
	get(metrics_server_port(s), "/ready", buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 200 "));
	get(metrics_server_port(s), "/nothing", buf, sizeof(buf));
	assert_non_null(strstr(buf, "HTTP/1.1 404 "));
	metrics_server_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_starting_then_snapshot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
