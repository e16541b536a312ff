/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small HTTP server for otelprofd's own metrics and health, on its own thread:
 *   GET /metrics  the last published Prometheus text
 *   GET /ready    200 "ready", or 503 with the reason (sampling stalled, profiles not delivered)
 * It only serves what the main loop last published, never live daemon state. One thread serves up
 * to 64 connections at once with non-blocking sockets; each has 5 s to send its request (4 KiB at
 * most) and 5 s to read the answer, and beyond 64 the oldest still waiting for its request is
 * closed, so idle or slow clients cannot lock out a scrape. Listening on a non-loopback address
 * logs a warning: nothing is authenticated.
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
/* The port bound. */
int metrics_server_port(const struct metrics_server *s);
/* Replace what is served. text is copied. */
void metrics_server_publish(struct metrics_server *s, const char *text, size_t len, bool ready, const char *reason);
void metrics_server_stop(struct metrics_server *s);

#endif
