/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The BPF ring buffer (BPF_MAP_TYPE_RINGBUF) read with its data pages mapped once. libbpf's
 * ring_buffer maps them twice in a row, so that a record running past the end reads on
 * contiguously: the kernel maps every page of a ring buffer at mmap() time, and resident memory
 * counts both copies (8 MiB for the default 4 MiB ring). Here a record that runs past the end (one
 * per trip round the ring) is copied into a buffer of the reader's instead; every other record is
 * handed over where it lies, as libbpf does.
 */
#ifndef OTELPROF_RING_READER_H
#define OTELPROF_RING_READER_H

#include <stddef.h>
#include <stdint.h>

/*
 * A ring's three parts as mapped: the consumer position (the reader's, written), the producer
 * position and the data pages (size bytes, a power of two). ring_reader_open() maps them;
 * a test can point them at its own memory.
 */
struct ring_view {
	unsigned long *consumer_pos;
	const unsigned long *producer_pos;
	const unsigned char *data;
	size_t size;
	/* A record that runs past the end of data, copied whole; grown to the longest such record,
	 * which the kernel bounds by size. Freed by ring_view_release(). */
	unsigned char *wrap;
	size_t wrap_cap;
	uint64_t wrapped; /* records handed over from the copy */
};

/* Called for each committed record, in order; a negative return stops the read after this record
 * (it stays consumed), as libbpf's ring_buffer__consume() callbacks do. */
typedef int (*ring_record_fn)(void *ctx, void *data, size_t size);

/*
 * Hand every committed record to fn (discarded ones skipped, the consumer position advanced after
 * each), until the ring is empty or a record not yet committed is reached. Records handed over,
 * or fn's negative return, or -ENOMEM (a wrapped record that could not be copied: it stays unread).
 */
int64_t ring_view_consume(struct ring_view *v, ring_record_fn fn, void *ctx);
void ring_view_release(struct ring_view *v);

struct ring_reader;

/* map_fd's ring of size data bytes (its max_entries) mapped: the consumer page read-write, the
 * producer page and the data pages read only, once. NULL with errno set. The caller keeps map_fd. */
struct ring_reader *ring_reader_open(int map_fd, size_t size);
void ring_reader_free(struct ring_reader *r);
/* The fd to wait on (epoll, EPOLLIN): the map's own, readable when the kernel's producers wake it. */
int ring_reader_fd(const struct ring_reader *r);
/* ring_view_consume() of the ring; the count is capped at INT_MAX. */
int ring_reader_consume(struct ring_reader *r, ring_record_fn fn, void *ctx);
/* Records that ran past the end of the data pages and were copied. */
uint64_t ring_reader_wrapped(const struct ring_reader *r);
/* Bytes of the data pages mapped (once). */
size_t ring_reader_data_bytes(const struct ring_reader *r);

#endif
