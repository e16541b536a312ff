#include "ops/metrics_server.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"

#define REQUEST_MAX 4096
#define IO_TIMEOUT_MS 2000

struct metrics_server {
	int fd;
	int port;
	int stop_pipe[2];
	pthread_t thread;
	pthread_mutex_t lock;
	char *text; /* what /metrics serves; guarded by lock */
	size_t len;
	bool ready;
	char reason[256];
};

/* Split "host:port" or "[v6]:port". 0 or -EINVAL. */
static int split_address(const char *address, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *colon;

	if (address[0] == '[') {
		const char *end = strchr(address, ']');

		if (!end || end[1] != ':' || (size_t)(end - address - 1) >= hostlen)
			return -EINVAL;
		memcpy(host, address + 1, end - address - 1);
		host[end - address - 1] = 0;
		colon = end + 1;
	} else {
		colon = strrchr(address, ':');
		if (!colon || (size_t)(colon - address) >= hostlen)
			return -EINVAL;
		memcpy(host, address, colon - address);
		host[colon - address] = 0;
	}
	if (!colon[1] || strlen(colon + 1) >= portlen || strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return -EINVAL;
	strcpy(port, colon + 1);
	return 0;
}

static bool write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		ssize_t n;

		if (poll(&p, 1, IO_TIMEOUT_MS) <= 0)
			return false;
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n <= 0)
			return false;
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

static void respond(int fd, int status, const char *reason, const char *type, const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			 status, reason, type, len);

	if (write_all(fd, head, (size_t)n))
		write_all(fd, body, len);
}

/* Read the request head (bounded in bytes and time) and answer it. */
static void serve(struct metrics_server *s, int fd)
{
	char req[REQUEST_MAX + 1], path[256], method[16];
	size_t got = 0;

	while (got < REQUEST_MAX && !memmem(req, got, "\r\n\r\n", 4)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, IO_TIMEOUT_MS) <= 0)
			return;
		n = recv(fd, req + got, REQUEST_MAX - got, 0);
		if (n <= 0)
			return;
		got += (size_t)n;
	}
	req[got] = 0;
	if (sscanf(req, "%15s %255s", method, path) != 2 || strcmp(method, "GET")) {
		respond(fd, 405, "Method Not Allowed", "text/plain", "GET only\n", 9);
		return;
	}
	path[strcspn(path, "?")] = 0;
	pthread_mutex_lock(&s->lock);
	if (!strcmp(path, "/metrics")) {
		respond(fd, 200, "OK", "text/plain; version=0.0.4", s->text ? s->text : "", s->len);
	} else if (!strcmp(path, "/ready") || !strcmp(path, "/healthz")) {
		char body[300];
		int n = snprintf(body, sizeof(body), "%s%s\n", s->ready ? "ready" : "not ready: ", s->ready ? "" : s->reason);

		respond(fd, s->ready ? 200 : 503, s->ready ? "OK" : "Service Unavailable", "text/plain", body, (size_t)n);
	} else {
		respond(fd, 404, "Not Found", "text/plain", "/metrics or /ready\n", 19);
	}
	pthread_mutex_unlock(&s->lock);
}

static void *run(void *arg)
{
	struct metrics_server *s = arg;

	for (;;) {
		struct pollfd p[2] = { { .fd = s->fd, .events = POLLIN }, { .fd = s->stop_pipe[0], .events = POLLIN } };
		int fd;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve(s, fd);
		close(fd);
	}
	return NULL;
}

struct metrics_server *metrics_server_start(const char *address)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct metrics_server *s = calloc(1, sizeof(*s));
	char host[256], port[16];
	struct addrinfo *ai = NULL;
	struct sockaddr_storage bound;
	socklen_t boundlen = sizeof(bound);
	sigset_t all, old;
	int one = 1, r;

	if (!s)
		return NULL;
	s->fd = s->stop_pipe[0] = s->stop_pipe[1] = -1;
	pthread_mutex_init(&s->lock, NULL);
	snprintf(s->reason, sizeof(s->reason), "starting");
	if (split_address(address, host, sizeof(host), port, sizeof(port))) {
		log_error("--metrics-address: '%s' is not HOST:PORT", address);
		errno = EINVAL;
		goto fail;
	}
	r = getaddrinfo(host, port, &hints, &ai);
	if (r) {
		log_error("--metrics-address: cannot resolve '%s': %s", host, gai_strerror(r));
		errno = EINVAL;
		goto fail;
	}
	s->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->fd < 0 || setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s->fd, ai->ai_addr, ai->ai_addrlen) || listen(s->fd, 16) ||
	    getsockname(s->fd, (struct sockaddr *)&bound, &boundlen) || pipe2(s->stop_pipe, O_CLOEXEC)) {
		log_error("Failed to listen on %s for metrics: %s", address, strerror(errno));
		goto fail;
	}
	s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						    : ((struct sockaddr_in *)&bound)->sin_port);
	freeaddrinfo(ai);
	ai = NULL;
	/* The thread takes no signals: SIGINT and SIGTERM belong to the main loop's signalfd. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&s->thread, NULL, run, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		errno = r;
		log_error("Failed to start the metrics thread: %s", strerror(r));
		goto fail;
	}
	return s;
fail:
	if (ai)
		freeaddrinfo(ai);
	if (s->fd >= 0)
		close(s->fd);
	if (s->stop_pipe[0] >= 0) {
		close(s->stop_pipe[0]);
		close(s->stop_pipe[1]);
	}
	pthread_mutex_destroy(&s->lock);
	free(s);
	return NULL;
}

int metrics_server_port(const struct metrics_server *s)
{
	return s->port;
}

void metrics_server_publish(struct metrics_server *s, const char *text, size_t len, bool ready, const char *reason)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return; /* keep serving the previous snapshot */
	memcpy(copy, text, len);
	copy[len] = 0;
	pthread_mutex_lock(&s->lock);
	free(s->text);
	s->text = copy;
	s->len = len;
	s->ready = ready;
	snprintf(s->reason, sizeof(s->reason), "%s", reason ? reason : "");
	pthread_mutex_unlock(&s->lock);
}

void metrics_server_stop(struct metrics_server *s)
{
	if (!s)
		return;
	if (write(s->stop_pipe[1], "x", 1) == 1)
		pthread_join(s->thread, NULL);
	close(s->fd);
	close(s->stop_pipe[0]);
	close(s->stop_pipe[1]);
	pthread_mutex_destroy(&s->lock);
	free(s->text);
	free(s);
}
