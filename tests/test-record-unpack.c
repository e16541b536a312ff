// SPDX-License-Identifier: Apache-2.0
/* Packed on-CPU samples and allocation records (sampling/record_unpack.c): unpacked into a whole
 * struct otelprof_sample with its tail after it; other records untouched; inconsistent depths or sizes handed on empty. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/record_unpack.h"

/* A packed sample of kd kernel and ud user ips and tail bytes of tail (0xab) into buf: its size. */
static size_t pack(uint8_t *buf, uint16_t kd, uint16_t ud, size_t tail)
{
	struct otelprof_sample head = { .hdr.kind = OTELPROF_RECORD_SAMPLE, .pid = 7, .tid = 8,
					.flags = OTELPROF_SAMPLE_PACKED | OTELPROF_SAMPLE_STACK_WINDOW,
					.kernel_depth = kd, .user_depth = ud };
	size_t off = OTELPROF_SAMPLE_HEAD_SIZE;

	head.hdr.size = (uint32_t)(OTELPROF_SAMPLE_HEAD_SIZE + (kd + ud) * 8 + tail);
	memcpy(buf, &head, OTELPROF_SAMPLE_HEAD_SIZE);
	for (uint64_t i = 0; i < kd; i++, off += 8)
		memcpy(buf + off, &(uint64_t){ 0xffffffff81000000ULL + i }, 8);
	for (uint64_t i = 0; i < ud; i++, off += 8)
		memcpy(buf + off, &(uint64_t){ 0x400000 + i }, 8);
	memset(buf + off, 0xab, tail);
	return off + tail;
}

static void test_unpacked_whole(void **state)
{
	struct record_unpack *u = calloc(1, sizeof(*u));
	uint8_t *buf = malloc(70000);
	const void *data = buf;
	size_t size = pack(buf, 3, 2, 100);
	const struct otelprof_sample *s;
	const uint8_t *tail;

	(void)state;
	record_unpack(u, &data, &size);
	s = data;
	assert_ptr_equal(data, u->buf);
	assert_int_equal(size, sizeof(*s) + 100);
	assert_int_equal(s->hdr.size, sizeof(*s) + 100);
	assert_int_equal(s->flags, OTELPROF_SAMPLE_STACK_WINDOW); /* the packed bit cleared */
	assert_int_equal(s->pid, 7);
	assert_int_equal(s->kernel_depth, 3);
	assert_int_equal(s->user_depth, 2);
	assert_true(s->kernel_ips[2] == 0xffffffff81000002ULL);
	assert_true(s->user_ips[0] == 0x400000 && s->user_ips[1] == 0x400001);
	tail = (const uint8_t *)(s + 1);
	assert_int_equal(tail[0], 0xab);
	assert_int_equal(tail[99], 0xab);
	assert_int_equal(u->unpacked, 1);
	assert_int_equal(u->packed_bytes, OTELPROF_SAMPLE_HEAD_SIZE + 5 * 8 + 100);
	free(buf);
	free(u);
}

/* An allocation's record: packed the same way, its fields still the last bytes of the whole record. */
static void test_alloc_unpacked(void **state)
{
	struct record_unpack *u = calloc(1, sizeof(*u));
	uint8_t *buf = malloc(70000);
	struct otelprof_alloc a = { .ptr = 0x7f0000001000ULL, .size = 48, .weight = 524288 }, got;
	const void *data = buf;
	size_t size = pack(buf, 0, 0, 64 + sizeof(a));
	const struct otelprof_sample *s;

	(void)state;
	((struct otelprof_sample *)buf)->hdr.kind = OTELPROF_RECORD_ALLOC;
	memcpy(buf + size - sizeof(a), &a, sizeof(a));
	record_unpack(u, &data, &size);
	s = data;
	assert_ptr_equal(data, u->buf);
	assert_int_equal(s->hdr.kind, OTELPROF_RECORD_ALLOC);
	assert_int_equal(size, sizeof(*s) + 64 + sizeof(a));
	memcpy(&got, (const uint8_t *)data + s->hdr.size - sizeof(got), sizeof(got));
	assert_true(got.ptr == a.ptr && got.size == a.size && got.weight == a.weight);
	assert_int_equal(u->unpacked, 1);
	free(buf);
	free(u);
}

static void test_others_untouched(void **state)
{
	struct record_unpack *u = calloc(1, sizeof(*u));
	struct otelprof_sample whole = { .hdr = { .kind = OTELPROF_RECORD_SAMPLE, .size = sizeof(whole) } };
	struct otelprof_proc_event e = { .hdr = { .kind = OTELPROF_RECORD_EXEC, .size = sizeof(e) } };
	const void *data = &whole;
	size_t size = sizeof(whole);

	(void)state;
	record_unpack(u, &data, &size);
	assert_ptr_equal(data, &whole);
	assert_int_equal(size, sizeof(whole));
	data = &e;
	size = sizeof(e);
	record_unpack(u, &data, &size);
	assert_ptr_equal(data, &e);
	data = &e;
	size = 4; /* shorter than a head: left to the reader, which counts it */
	record_unpack(u, &data, &size);
	assert_int_equal(size, 4);
	assert_int_equal(u->unpacked + u->malformed, 0);
	free(u);
}

static void test_malformed_empty(void **state)
{
	struct record_unpack *u = calloc(1, sizeof(*u));
	uint8_t *buf = malloc(200000);
	struct otelprof_sample *head = (struct otelprof_sample *)buf;
	const void *data;
	size_t size, n;

	(void)state;
	/* Depth over the bound. */
	n = pack(buf, 2, 0, 0);
	head->kernel_depth = OTELPROF_MAX_STACK_DEPTH + 1;
	data = buf, size = n;
	record_unpack(u, &data, &size);
	assert_int_equal(size, 0);
	/* The record claims more than was read. */
	n = pack(buf, 2, 2, 16);
	data = buf, size = n - 1;
	record_unpack(u, &data, &size);
	assert_int_equal(size, 0);
	/* Depths past the record's own size. */
	n = pack(buf, 2, 2, 0);
	head->user_depth = 3;
	data = buf, size = n;
	record_unpack(u, &data, &size);
	assert_int_equal(size, 0);
	/* A tail larger than any sample's. */
	n = pack(buf, 0, 0, RECORD_UNPACK_TAIL_MAX + 8);
	data = buf, size = n;
	record_unpack(u, &data, &size);
	assert_int_equal(size, 0);
	assert_int_equal(u->malformed, 4);
	assert_int_equal(u->unpacked, 0);
	free(buf);
	free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unpacked_whole),
		cmocka_unit_test(test_alloc_unpacked),
		cmocka_unit_test(test_others_untouched),
		cmocka_unit_test(test_malformed_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
