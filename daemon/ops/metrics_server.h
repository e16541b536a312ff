/*
 * A small HTTP server for otelprofd's own metrics and health, on its own thread:
 *   GET /metrics  the last published Prometheus text
 *   GET /ready    200 "ready", or 503 with the reason (sampling stalled, profiles not delivered)
 * It only serves what the main loop last published, never live daemon state. One request at a
 * time, each bounded in size and time, so a slow or hostile client cannot hold it for long.
 * metrics_server_start() returns an object that metrics_server_stop() stops and frees.
 */
#ifndef OTELPROFD_METRICS_SERVER_H
#define OTELPROFD_METRICS_SERVER_H

#include <stdbool.h>
#include <stddef.h>

struct metrics_server;

/* Listen on address ("127.0.0.1:9464", "[::1]:9464", "localhost:9464"). NULL with errno; the
 * reason is logged. */
struct metrics_server *metrics_server_start(const char *address);
/* The port bound (useful with port 0). */
int metrics_server_port(const struct metrics_server *s);
/* Replace what is served. text is copied. */
void metrics_server_publish(struct metrics_server *s, const char *text, size_t len, bool ready, const char *reason);
void metrics_server_stop(struct metrics_server *s);

#endif
