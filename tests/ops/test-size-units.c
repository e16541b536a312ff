// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/options.h"
#include "parse_units.h"

/* Parse "otelprofd LINE" (split at spaces); the first error line in msg. */
static enum options_result parse(struct options *o, const char *line, char *msg, size_t size)
{
	char buf[512], *argv[32], *text = NULL;
	size_t len = 0;
	int argc = 0;
	FILE *devnull = fopen("/dev/null", "w"), *err = open_memstream(&text, &len);
	enum options_result r;

	snprintf(buf, sizeof(buf), "otelprofd %s", line);
	for (char *tok = strtok(buf, " "); tok && argc < 31; tok = strtok(NULL, " "))
		argv[argc++] = tok;
	argv[argc] = NULL;
	r = options_parse(o, argc, argv, devnull, err);
	fclose(devnull);
	fclose(err);
	snprintf(msg, size, "%.*s", (int)strcspn(text, "\n"), text);
	free(text);
	return r;
}

/* Every flag that is a size takes a unit. */
static void test_every_size_flag_takes_units(void **state)
{
	struct options o;
	char msg[512];

	(void)state;
	assert_int_equal(parse(&o, "--ringbuf-size 4MiB --max-message-size 1MiB --queue-bytes 32MiB "
				   "--stack-copy 8KiB --symbol-cache 64MiB", msg, sizeof(msg)), OPTIONS_OK);
	assert_int_equal(o.ringbuf_kib, 4096);
	assert_int_equal(o.export.max_message_size, 1u << 20);
	assert_int_equal(o.export.queue_bytes, 32u << 20);
	assert_int_equal(o.stack_copy, 8192);
	assert_int_equal(o.symbol_cache, 64u << 20);
	options_free(&o);
	assert_int_equal(parse(&o, "--ringbuf-size 1G", msg, sizeof(msg)), OPTIONS_OK);
	assert_int_equal(o.ringbuf_kib, 1u << 20);
	options_free(&o);
}

/* --ringbuf-size: a plain number still counts KiB (configurations written before units). */
static void test_ringbuf_plain_kib(void **state)
{
	struct options o;
	char msg[512];

	(void)state;
	assert_int_equal(parse(&o, "--ringbuf-size 4096", msg, sizeof(msg)), OPTIONS_OK);
	assert_int_equal(o.ringbuf_kib, 4096);
	options_free(&o);
	assert_int_equal(parse(&o, "--ringbuf-size 64KiB", msg, sizeof(msg)), OPTIONS_OK);
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
		assert_int_not_equal(parse(&o, line, msg, sizeof(msg)), OPTIONS_OK);
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
