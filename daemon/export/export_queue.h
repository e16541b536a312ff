/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A bounded FIFO of serialized requests, bounded by count and by bytes. Pushing past either bound
 * drops the oldest requests (counted); a request larger than the byte bound alone is refused
 * (counted). Not thread-safe: the exporter holds its lock around every call.
 */
#ifndef OTELPROFD_EXPORT_QUEUE_H
#define OTELPROFD_EXPORT_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct export_item {
	uint8_t *data; /* malloc'ed; owned by the queue while queued, then by who popped it */
	size_t len;
	uint64_t nsamples; /* for counters: samples the request carries */
};

struct export_queue {
	struct export_item *items; /* ring of max_items */
	size_t max_items, max_bytes;
	size_t head, count, bytes;
	uint64_t dropped;          /* requests dropped to make room or too large */
	uint64_t dropped_samples;  /* samples in them */
};

int export_queue_init(struct export_queue *q, size_t max_items, size_t max_bytes);
/* Frees what is still queued. */
void export_queue_destroy(struct export_queue *q);
/* Takes ownership of item->data in every case. 0, or -E2BIG when it alone exceeds max_bytes. */
int export_queue_push(struct export_queue *q, struct export_item item);
/* The oldest request (ownership moves to the caller); false when empty. */
bool export_queue_pop(struct export_queue *q, struct export_item *item);
/* Drop everything queued, counted. */
void export_queue_drop_all(struct export_queue *q);

#endif
