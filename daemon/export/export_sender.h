/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exporter: a bounded queue of serialized requests and one sender thread that sends them to
 * the collector through a transport, so sampling never waits on the network. Retryable failures
 * are retried with exponential backoff and jitter (the server's delay wins when longer) until
 * max_elapsed_ns after the first attempt, then dropped and counted; permanent failures are dropped
 * at once and counted. exporter_report() logs what went wrong since its last call (once per
 * export interval), with the server's message.
 */
#ifndef OTELPROFD_EXPORT_SENDER_H
#define OTELPROFD_EXPORT_SENDER_H

#include <stddef.h>
#include <stdint.h>

#include "export/export_transport.h"

struct exporter_config {
	size_t queue_size;         /* requests waiting */
	size_t queue_bytes;        /* bytes waiting */
	uint64_t timeout_ns;       /* per attempt */
	uint64_t initial_backoff_ns; /* first retry delay (default 1 s) */
	uint64_t max_backoff_ns;   /* cap on the delay (default 30 s) */
	uint64_t max_elapsed_ns;   /* give up on a request this long after its first attempt (default 60 s) */
};

struct exporter_stats {
	uint64_t enqueued;          /* requests handed to the exporter */
	uint64_t sent;              /* accepted by the collector */
	uint64_t bytes_sent;        /* uncompressed bytes of the accepted requests */
	uint64_t samples_sent;
	uint64_t attempts;          /* every send, retries included */
	uint64_t retries;
	uint64_t dropped_queue_full; /* oldest dropped to make room (or too large for the queue) */
	uint64_t dropped_retries;   /* retried until max_elapsed_ns, then dropped */
	uint64_t dropped_permanent; /* refused by the collector for good */
	uint64_t dropped_shutdown;  /* still queued when the shutdown deadline passed */
	uint64_t dropped_samples;   /* samples in every dropped request */
	uint64_t rejected_profiles; /* partial_success.rejected_profiles, summed */
	size_t queued, queued_bytes; /* now */
};

struct exporter;

/* Takes ownership of transport (freed by exporter_free, also on failure). NULL with errno. */
struct exporter *exporter_new(struct export_transport *transport, const struct exporter_config *cfg);
/* Queue one request; takes ownership of data. Never blocks on the network. 0 or -E2BIG/-ESHUTDOWN. */
int exporter_enqueue(struct exporter *e, uint8_t *data, size_t len, uint64_t nsamples);
/* Send what is queued until it is empty or deadline_ns (CLOCK_MONOTONIC) passes; then stop the
 * thread. What is left is dropped and counted. 0, or -ETIMEDOUT when something was left. */
int exporter_shutdown(struct exporter *e, uint64_t deadline_ns);
void exporter_free(struct exporter *e);
void exporter_get_stats(struct exporter *e, struct exporter_stats *out);
/* Log the failures since the last call, one line per kind, with the last server message. */
void exporter_report(struct exporter *e);

#endif
