// SPDX-License-Identifier: Apache-2.0
#include "sampling/ring_reader.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct ring_reader {
	struct ring_view view;
	int map_fd;
	size_t page_size;
	void *consumer_map; /* one page */
	void *producer_map; /* the producer page, then the data pages once */
};

/* A record's bytes in the ring: its header, its length rounded up to 8 (the kernel's layout). */
static uint64_t ring_span(uint32_t len)
{
	len &= ~(uint32_t)BPF_RINGBUF_DISCARD_BIT;
	return ((uint64_t)len + BPF_RINGBUF_HDR_SZ + 7) & ~(uint64_t)7;
}

/* The record of len bytes at offset at, contiguous: where it lies, or its copy when it runs past the
 * end of the data pages. NULL without memory. */
static void *record_at(struct ring_view *v, size_t at, size_t len)
{
	size_t head = v->size - at;

	if (len <= head)
		return (void *)(v->data + at);
	if (len > v->size)
		return NULL; /* never from the kernel: a record fits in the ring */
	if (len > v->wrap_cap) {
		unsigned char *n = realloc(v->wrap, len);

		if (!n)
			return NULL;
		v->wrap = n;
		v->wrap_cap = len;
	}
	memcpy(v->wrap, v->data + at, head);
	memcpy(v->wrap + head, v->data, len - head);
	v->wrapped++;
	return v->wrap;
}

int64_t ring_view_consume(struct ring_view *v, ring_record_fn fn, void *ctx)
{
	unsigned long cons = __atomic_load_n(v->consumer_pos, __ATOMIC_ACQUIRE), prod;
	size_t mask = v->size - 1;
	int64_t count = 0;
	bool more;

	do {
		more = false;
		prod = __atomic_load_n(v->producer_pos, __ATOMIC_ACQUIRE);
		while (cons < prod) {
			size_t at = cons & mask; /* 8-aligned: a header never runs past the end */
			uint32_t len = __atomic_load_n((const uint32_t *)(v->data + at), __ATOMIC_ACQUIRE);
			void *record;
			int r;

			if (len & BPF_RINGBUF_BUSY_BIT)
				return count; /* not committed yet: the next read takes it */
			more = true;
			if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
				record = record_at(v, (at + BPF_RINGBUF_HDR_SZ) & mask, len);
				if (!record)
					return -ENOMEM;
				cons += ring_span(len);
				r = fn(ctx, record, len);
				if (r < 0) {
					__atomic_store_n(v->consumer_pos, cons, __ATOMIC_RELEASE);
					return r;
				}
				count++;
			} else {
				cons += ring_span(len);
			}
			__atomic_store_n(v->consumer_pos, cons, __ATOMIC_RELEASE);
		}
	} while (more);
	return count;
}

void ring_view_release(struct ring_view *v)
{
	free(v->wrap);
	v->wrap = NULL;
	v->wrap_cap = 0;
}

struct ring_reader *ring_reader_open(int map_fd, size_t size)
{
	struct ring_reader *r;
	int err;

	if (!size || (size & (size - 1))) {
		errno = EINVAL;
		return NULL;
	}
	if (!(r = calloc(1, sizeof(*r))))
		return NULL;
	r->map_fd = map_fd;
	r->page_size = (size_t)sysconf(_SC_PAGESIZE);
	r->consumer_map = mmap(NULL, r->page_size, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	r->producer_map = MAP_FAILED;
	if (r->consumer_map == MAP_FAILED)
		goto fail;
	/* The producer page and the data pages once (libbpf maps them twice: page_size + 2 * size). */
	r->producer_map = mmap(NULL, r->page_size + size, PROT_READ, MAP_SHARED, map_fd,
			       (off_t)r->page_size);
	if (r->producer_map == MAP_FAILED)
		goto fail;
	r->view = (struct ring_view){
		.consumer_pos = r->consumer_map,
		.producer_pos = r->producer_map,
		.data = (const unsigned char *)r->producer_map + r->page_size,
		.size = size,
	};
	return r;

fail:
	err = errno;
	ring_reader_free(r);
	errno = err;
	return NULL;
}

void ring_reader_free(struct ring_reader *r)
{
	if (!r)
		return;
	if (r->producer_map && r->producer_map != MAP_FAILED)
		munmap(r->producer_map, r->page_size + r->view.size);
	if (r->consumer_map && r->consumer_map != MAP_FAILED)
		munmap(r->consumer_map, r->page_size);
	ring_view_release(&r->view);
	free(r);
}

int ring_reader_fd(const struct ring_reader *r)
{
	return r->map_fd;
}

int ring_reader_consume(struct ring_reader *r, ring_record_fn fn, void *ctx)
{
	int64_t n = ring_view_consume(&r->view, fn, ctx);

	return n > INT_MAX ? INT_MAX : (int)n;
}

uint64_t ring_reader_wrapped(const struct ring_reader *r)
{
	return r->view.wrapped;
}

size_t ring_reader_data_bytes(const struct ring_reader *r)
{
	return r->view.size;
}
