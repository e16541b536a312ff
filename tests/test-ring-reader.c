// SPDX-License-Identifier: Apache-2.0
/* The ring buffer read with its data mapped once (sampling/ring_reader.c): records handed over in
 * order where they lie, a record that runs past the end copied whole, discarded ones skipped, a
 * record not committed yet stops the read, a negative callback stops it with its record consumed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/ring_reader.h"

#define RING 4096

struct fake {
	unsigned long consumer, producer;
	_Alignas(8) unsigned char data[RING];
	struct ring_view view;
};

struct seen {
	unsigned n;
	size_t sizes[16];
	unsigned char first[16], last[16];
	int stop_at; /* return -ECANCELED at this record (1-based); 0: never */
};

static void fake_init(struct fake *f, unsigned long start)
{
	memset(f, 0, sizeof(*f));
	f->consumer = f->producer = start;
	f->view = (struct ring_view){ .consumer_pos = &f->consumer, .producer_pos = &f->producer,
				      .data = f->data, .size = RING };
}

/* A record of len bytes filled with fill at the producer position, with header flags. */
static void put(struct fake *f, uint32_t len, unsigned char fill, uint32_t flags)
{
	size_t at = f->producer & (RING - 1);
	uint32_t hdr[2] = { len | flags, 0 };

	memcpy(f->data + at, hdr, sizeof(hdr));
	for (uint32_t i = 0; i < len; i++)
		f->data[(at + 8 + i) & (RING - 1)] = (unsigned char)(fill + i);
	f->producer += (8 + len + 7) & ~7u;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct seen *s = ctx;
	const unsigned char *p = data;

	for (size_t i = 0; i < size; i++)
		assert_int_equal(p[i], (unsigned char)(p[0] + i)); /* whole and in order */
	s->sizes[s->n] = size;
	s->first[s->n] = p[0];
	s->last[s->n] = p[size - 1];
	s->n++;
	return s->stop_at && (int)s->n == s->stop_at ? -ECANCELED : 0;
}

static void test_in_order_and_wrapped(void **state)
{
	struct fake *f = malloc(sizeof(*f));
	struct seen s = { 0 };

	(void)state;
	fake_init(f, 3 * RING + RING - 1024); /* 1 KiB before the end, after three trips */
	put(f, 100, 1, 0);
	put(f, 300, 2, BPF_RINGBUF_DISCARD_BIT);
	put(f, 1000, 3, 0); /* runs past the end */
	put(f, 50, 4, 0);
	assert_int_equal(ring_view_consume(&f->view, on_record, &s), 3);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.sizes[0], 100);
	assert_int_equal(s.first[0], 1);
	assert_int_equal(s.sizes[1], 1000);
	assert_int_equal(s.first[1], 3);
	assert_int_equal(s.last[1], (unsigned char)(3 + 999));
	assert_int_equal(s.sizes[2], 50);
	assert_int_equal(f->view.wrapped, 1);
	assert_true(f->consumer == f->producer);
	assert_int_equal(ring_view_consume(&f->view, on_record, &s), 0);
	ring_view_release(&f->view);
	free(f);
}

static void test_busy_stops(void **state)
{
	struct fake *f = malloc(sizeof(*f));
	struct seen s = { 0 };
	unsigned long busy_at;

	(void)state;
	fake_init(f, 0);
	put(f, 16, 1, 0);
	busy_at = f->producer;
	put(f, 16, 2, BPF_RINGBUF_BUSY_BIT);
	put(f, 16, 3, 0);
	assert_int_equal(ring_view_consume(&f->view, on_record, &s), 1);
	assert_true(f->consumer == busy_at);
	/* Committed: the rest is read. */
	f->data[busy_at + 3] &= 0x7f;
	assert_int_equal(ring_view_consume(&f->view, on_record, &s), 2);
	assert_int_equal(s.first[1], 2);
	assert_true(f->consumer == f->producer);
	ring_view_release(&f->view);
	free(f);
}

static void test_callback_stops(void **state)
{
	struct fake *f = malloc(sizeof(*f));
	struct seen s = { .stop_at = 2 };
	unsigned long after_second;

	(void)state;
	fake_init(f, 0);
	put(f, 24, 1, 0);
	put(f, 24, 2, 0);
	after_second = f->producer;
	put(f, 24, 3, 0);
	assert_int_equal(ring_view_consume(&f->view, on_record, &s), -ECANCELED);
	assert_true(f->consumer == after_second); /* the stopping record stays consumed */
	s.stop_at = 0;
	assert_int_equal(ring_view_consume(&f->view, on_record, &s), 1);
	assert_int_equal(s.first[2], 3);
	ring_view_release(&f->view);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order_and_wrapped),
		cmocka_unit_test(test_busy_stops),
		cmocka_unit_test(test_callback_stops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
