// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../options-line.h"
#include "config/options.h"
#include "parse_units.h"

/* Every flag that is a size takes a unit. */
static void test_every_size_flag_takes_units(void **state)
{
	struct options o;
	char msg[512];

	(void)state;
	assert_int_equal(parse_message(&o, "--ringbuf-size 4MiB --max-message-size 1MiB --queue-bytes 32MiB "
					   "--stack-copy 8KiB --symbol-cache 64MiB", msg, sizeof(msg)), OPTIONS_OK);
	assert_int_equal(o.ringbuf_kib, 4096);
	assert_int_equal(o.export.max_message_size, 1u << 20);
	assert_int_equal(o.export.queue_bytes, 32u << 20);
	assert_int_equal(o.stack_copy, 8192);
	assert_int_equal(o.symbol_cache, 64u << 20);
	options_free(&o);
	assert_int_equal(parse_message(&o, "--ringbuf-size 1G", msg, sizeof(msg)), OPTIONS_OK);
	assert_int_equal(o.ringbuf_kib, 1u << 20);
	options_free(&o);
}

/* --ringbuf-size: a plain number still counts KiB (configurations written before units). */
static void test_ringbuf_plain_kib(void **state)
{
	struct options o;
	char msg[512];

	(void)state;
	assert_int_equal(parse_message(&o, "--ringbuf-size 4096", msg, sizeof(msg)), OPTIONS_OK);
	assert_int_equal(o.ringbuf_kib, 4096);
	options_free(&o);
	assert_int_equal(parse_message(&o, "--ringbuf-size 64KiB", msg, sizeof(msg)), OPTIONS_OK);
	assert_int_equal(o.ringbuf_kib, 64);
	options_free(&o);
}

static void test_ringbuf_refused(void **state)
{
	const char *bad[] = { "3MiB", "32KiB", "2GiB", "100", "4MB", "MiB", "-4MiB", "4.5MiB", "65535B" };
	struct options o;
	char msg[512];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char line[64];

		snprintf(line, sizeof(line), "--ringbuf-size %s", bad[i]);
		assert_int_not_equal(parse_message(&o, line, msg, sizeof(msg)), OPTIONS_OK);
		assert_non_null(strstr(msg, "--ringbuf-size: '"));
		assert_non_null(strstr(msg, "is not a power of two from 64KiB to 1GiB"));
	}
}

static void test_plain_scale(void **state)
{
	size_t bytes;

	(void)state;
	assert_int_equal(parse_size_plain_scale("16", 1024, &bytes), 0);
	assert_int_equal(bytes, 16384);
	assert_int_equal(parse_size_plain_scale("16B", 1024, &bytes), 0);
	assert_int_equal(bytes, 16);
	assert_int_equal(parse_size_plain_scale("16KiB", 1024, &bytes), 0);
	assert_int_equal(bytes, 16384);
	assert_int_equal(parse_size("16", &bytes), 0);
	assert_int_equal(bytes, 16);
	assert_int_not_equal(parse_size_plain_scale("16", 0, &bytes), 0);
	assert_int_not_equal(parse_size_plain_scale("99999999999999999999", 1024, &bytes), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_size_flag_takes_units),
		cmocka_unit_test(test_ringbuf_plain_kib),
		cmocka_unit_test(test_ringbuf_refused),
		cmocka_unit_test(test_plain_scale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
