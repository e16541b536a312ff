// SPDX-License-Identifier: Apache-2.0
#include "ops/metrics_server.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "parse.h"

#define REQUEST_MAX 4096
/* To send the request, then again to read the answer: a slow client is cut, not waited for. */
#define DEADLINE_NS (5 * 1000000000ULL)
#define MAX_CONNECTIONS 64

/* Why a connection was closed without an answer (otelprofd_metrics_connections_dropped_total). */
enum drop_reason { DROP_OVER_LIMIT, DROP_TIMEOUT, DROP_TOO_LARGE, DROP_MAX };
static const char *const drop_names[DROP_MAX] = { "over_limit", "timeout", "request_too_large" };

struct connection {
	int fd;               /* -1: a free slot */
	bool writing;         /* the request was read and out is being sent */
	uint64_t accepted_ns; /* CLOCK_MONOTONIC: the oldest waiting one makes room at the cap */
	uint64_t deadline_ns; /* closed when its request (or answer) is not through by then */
	size_t got;           /* bytes of the request in req */
	char req[REQUEST_MAX];
	char *out;            /* the whole answer, head and body */
	size_t out_len, out_off;
};

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
	/* The server thread's own: */
	struct connection conns[MAX_CONNECTIONS];
	uint64_t dropped[DROP_MAX];
	uint64_t accept_paused_until_ns; /* after EMFILE and the like, so a full table does not spin */
};

static void conn_close(struct metrics_server *s, struct connection *c, int reason)
{
	if (reason >= 0)
		s->dropped[reason]++;
	close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
}

/* The body of /metrics: the published text and the server's own counters. false, with nothing
 * written, before the first text: served half, a scrape would look like every series vanished. */
static bool write_metrics(struct metrics_server *s, FILE *f)
{
	bool published;

	pthread_mutex_lock(&s->lock);
	published = s->text != NULL;
	if (published)
		fwrite(s->text, 1, s->len, f);
	pthread_mutex_unlock(&s->lock);
	if (!published)
		return false;
	fprintf(f, "# HELP otelprofd_metrics_connections_dropped_total connections to this server closed "
		   "unanswered, by reason (%d open at most)\n"
		   "# TYPE otelprofd_metrics_connections_dropped_total counter\n", MAX_CONNECTIONS);
	for (int i = 0; i < DROP_MAX; i++)
		fprintf(f, "otelprofd_metrics_connections_dropped_total{reason=\"%s\"} %" PRIu64 "\n", drop_names[i],
			s->dropped[i]);
	return true;
}

/* Prepare the answer to the request in c->req (complete, NUL-terminated). */
static int conn_answer(struct metrics_server *s, struct connection *c)
{
	char path[256], method[16], *body = NULL;
	size_t len = 0;
	int status = 200;
	const char *type = "text/plain", *status_text = "OK";
	FILE *f = open_memstream(&body, &len);

	if (!f)
		return -ENOMEM;
	if (sscanf(c->req, "%15s %255s", method, path) != 2 || strcmp(method, "GET"))
		path[0] = 0;
	path[strcspn(path, "?")] = 0;
	if (!path[0]) {
		status = 405, status_text = "Method Not Allowed";
		fputs("GET only\n", f);
	} else if (!strcmp(path, "/metrics")) {
		if (write_metrics(s, f)) {
			type = "text/plain; version=0.0.4";
		} else {
			status = 503, status_text = "Service Unavailable";
			fputs("starting: no metrics yet\n", f);
		}
	} else if (!strcmp(path, "/ready") || !strcmp(path, "/healthz")) {
		pthread_mutex_lock(&s->lock);
		if (!s->ready)
			status = 503, status_text = "Service Unavailable";
		fprintf(f, "%s%s\n", s->ready ? "ready" : "not ready: ", s->ready ? "" : s->reason);
		pthread_mutex_unlock(&s->lock);
	} else {
		status = 404, status_text = "Not Found";
		fputs("/metrics or /ready\n", f);
	}
	if (fclose(f) || !body) {
		free(body);
		return -ENOMEM;
	}
	f = open_memstream(&c->out, &c->out_len);
	if (!f) {
		free(body);
		return -ENOMEM;
	}
	fprintf(f, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
		status, status_text, type, len);
	fwrite(body, 1, len, f);
	free(body);
	if (fclose(f) || !c->out)
		return -ENOMEM;
	c->out_off = 0;
	return 0;
}

static void conn_write(struct metrics_server *s, struct connection *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return; /* poll() says when there is room */
		if (n <= 0) {
			conn_close(s, c, -1);
			return;
		}
		c->out_off += (size_t)n;
	}
	conn_close(s, c, -1);
}

static void conn_read(struct metrics_server *s, struct connection *c, uint64_t now)
{
	ssize_t n = recv(c->fd, c->req + c->got, REQUEST_MAX - 1 - c->got, 0);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(s, c, -1); /* gone before asking: a port check, not an error */
		return;
	}
	c->got += (size_t)n;
	c->req[c->got] = 0;
	if (!strstr(c->req, "\r\n\r\n")) {
		if (c->got == REQUEST_MAX - 1)
			conn_close(s, c, DROP_TOO_LARGE);
		return;
	}
	if (conn_answer(s, c)) {
		conn_close(s, c, -1);
		return;
	}
	c->writing = true;
	c->deadline_ns = now + DEADLINE_NS;
	conn_write(s, c);
}

/* A slot for a new connection: a free one, else the oldest still waiting for its request's
 * (counted), so idle connections cannot lock out a scrape; NULL when every one is answering. */
static struct connection *conn_slot(struct metrics_server *s)
{
	struct connection *oldest = NULL;

	for (int i = 0; i < MAX_CONNECTIONS; i++) {
		struct connection *c = &s->conns[i];

		if (c->fd < 0)
			return c;
		if (!c->writing && (!oldest || c->accepted_ns < oldest->accepted_ns))
			oldest = c;
	}
	if (oldest)
		conn_close(s, oldest, DROP_OVER_LIMIT);
	return oldest;
}

static void accept_all(struct metrics_server *s, uint64_t now)
{
	/* Bounded, so a flood of connections leaves time to answer the ones already open. */
	for (int i = 0; i < 2 * MAX_CONNECTIONS; i++) {
		int fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct connection *c;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				s->accept_paused_until_ns = now + 100000000ULL; /* out of descriptors, or memory */
			return;
		}
		c = conn_slot(s);
		if (!c) {
			s->dropped[DROP_OVER_LIMIT]++;
			close(fd);
			continue;
		}
		*c = (struct connection){ .fd = fd, .accepted_ns = now, .deadline_ns = now + DEADLINE_NS };
	}
}

/* One thread, one poll() over the listening socket and every connection, each non-blocking. */
static void *run(void *arg)
{
	struct metrics_server *s = arg;
	struct pollfd p[2 + MAX_CONNECTIONS];
	struct connection *polled[MAX_CONNECTIONS];

	for (;;) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC), wake = now + 3600 * 1000000000ULL;
		nfds_t n = 2;
		bool listening = now >= s->accept_paused_until_ns;

		p[0] = (struct pollfd){ .fd = s->stop_pipe[0], .events = POLLIN };
		p[1] = (struct pollfd){ .fd = listening ? s->fd : -1, .events = POLLIN };
		if (!listening)
			wake = s->accept_paused_until_ns;
		for (int i = 0; i < MAX_CONNECTIONS; i++) {
			struct connection *c = &s->conns[i];

			if (c->fd >= 0 && now >= c->deadline_ns)
				conn_close(s, c, DROP_TIMEOUT);
			if (c->fd < 0)
				continue;
			if (c->deadline_ns < wake)
				wake = c->deadline_ns;
			polled[n - 2] = c;
			p[n++] = (struct pollfd){ .fd = c->fd, .events = c->writing ? POLLOUT : POLLIN };
		}
		if (poll(p, n, (int)((wake - now) / 1000000 + 1)) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		now = clock_ns(CLOCK_MONOTONIC);
		for (nfds_t i = 2; i < n; i++) {
			if (!p[i].revents)
				continue;
			if (polled[i - 2]->writing)
				conn_write(s, polled[i - 2]);
			else
				conn_read(s, polled[i - 2], now);
		}
		if (p[1].revents & POLLIN)
			accept_all(s, now);
	}
	for (int i = 0; i < MAX_CONNECTIONS; i++)
		if (s->conns[i].fd >= 0)
			conn_close(s, &s->conns[i], -1);
	return NULL;
}

/* 127.0.0.0/8, ::1 or ::ffff:127.x: reachable from this host only. */
static bool loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24 == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

struct metrics_server *metrics_server_start(const char *address)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct metrics_server *s = calloc(1, sizeof(*s));
	char host[256], port[16];
	const char *why;
	unsigned portnum;
	struct addrinfo *ai = NULL;
	struct sockaddr_storage bound;
	socklen_t boundlen = sizeof(bound);
	sigset_t all, old;
	int one = 1, r;

	if (!s)
		return NULL;
	s->fd = s->stop_pipe[0] = s->stop_pipe[1] = -1;
	for (int i = 0; i < MAX_CONNECTIONS; i++)
		s->conns[i].fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	snprintf(s->reason, sizeof(s->reason), "starting");
	if (parse_host_port(address, strlen(address), true, host, sizeof(host), &portnum, &why)) {
		log_error("--metrics-address: '%s' is not HOST:PORT: %s", address, why);
		errno = EINVAL;
		goto fail;
	}
	snprintf(port, sizeof(port), "%u", portnum);
	r = getaddrinfo(host, port, &hints, &ai);
	if (r) {
		log_error("--metrics-address: cannot resolve '%s': %s", host, gai_strerror(r));
		errno = EINVAL;
		goto fail;
	}
	s->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->fd < 0 || setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s->fd, ai->ai_addr, ai->ai_addrlen) || listen(s->fd, SOMAXCONN) ||
	    getsockname(s->fd, (struct sockaddr *)&bound, &boundlen) || pipe2(s->stop_pipe, O_CLOEXEC)) {
		log_error("Failed to listen on %s for metrics: %s", address, strerror(errno));
		goto fail;
	}
	s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						    : ((struct sockaddr_in *)&bound)->sin_port);
	if (!loopback(ai->ai_addr))
		log_warn("The metrics server listens on %s, reachable from the network: /metrics and /ready have no "
			 "authentication", address);
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
