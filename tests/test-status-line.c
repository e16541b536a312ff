// SPDX-License-Identifier: Apache-2.0
/* The status line's text (ops/status_line.c); what a terminal shows of it is tested under a
 * pseudo-terminal by integration/test_status_line.py. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "ops/status_line.h"

static void test_format(void **state)
{
	struct self_metrics m = { 0 };
	char buf[256];

	(void)state;
	m.aggregate.samples = 1;
	m.processes.sampled = 1;
	status_line_format(buf, sizeof(buf), 7500000000ULL, 30000000000ULL, &m, NULL, 0);
	assert_string_equal(buf, "otelprofd: 0:07 / 0:30: 1 sample, 1 process");

	m.aggregate.samples = 1386;
	m.processes.sampled = 12;
	m.bpf[OTELPROF_CNT_RINGBUF_FULL] = 3;
	status_line_format(buf, sizeof(buf), 3723000000000ULL, 7200000000000ULL, &m, "", 0);
	assert_string_equal(buf, "otelprofd: 1:02:03 / 2:00:00: 1386 samples, 12 processes, 3 dropped; no export yet");
	status_line_format(buf, sizeof(buf), 61000000000ULL, 60000000000ULL, &m, "sent", 2100000000ULL);
	assert_string_equal(buf, "otelprofd: 1:00 / 1:00: 1386 samples, 12 processes, 3 dropped; last export: sent 2 s ago");
	/* A small buffer is cut, never overrun. */
	status_line_format(buf, 20, 0, 60000000000ULL, &m, "dropped", 0);
	assert_int_equal(strlen(buf), 19);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
