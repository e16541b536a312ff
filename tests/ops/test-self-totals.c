// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/self_metrics.h"

/* Every counter the two log lines and /metrics draw on, each a different power of two, so a
 * term left out of (or counted twice in) one of them shows. */
static void fill(struct self_metrics *m)
{
	memset(m, 0, sizeof(*m));
	m->aggregate.samples = 100000;
	m->bpf[OTELPROF_CNT_RINGBUF_FULL] = 1;
	m->aggregate.dropped_entries = 2;
	m->aggregate.dropped_stack_bytes = 4;
	m->aggregate.dropped_samples = 8;
	m->aggregate.dropped_nomem = 16;
	m->aggregate.malformed = 32;
	m->malformed_records = 64;
	m->aggregate.dropped_at_build = 128;
	m->samples_shed = 256;
	m->samples_at_exit = 512;
	m->samples_stale = 1024;
	m->symbolizer.lookups = 5000;
	m->symbolizer.symbolized = 4000;
}

/* The periodic stats line (from the start: no previous snapshot) and the end-of-run line show the
 * same kept, dropped and not-symbolized counts; the end line's parts add up to its total. */
static void test_lines_agree(void **state)
{
	struct self_metrics m;
	char stats[512], totals[512];
	uint64_t s_kept, s_dropped, s_unsym, t_kept, t_dropped, t_unsym, parts[10];

	(void)state;
	fill(&m);
	self_metrics_format_summary(&m, NULL, 0, stats, sizeof(stats));
	self_metrics_format_totals(&m, totals, sizeof(totals));
	print_message("%s\n%s\n", stats, totals);
	assert_int_equal(sscanf(stats, "stats: %" SCNu64 " samples (%" SCNu64 " dropped), %" SCNu64 " not symbolized",
				&s_kept, &s_dropped, &s_unsym), 3);
	assert_int_equal(sscanf(totals, "%" SCNu64 " samples kept, %" SCNu64 " dropped (ring buffer full %" SCNu64
				", stack table full %" SCNu64 ", sample bound %" SCNu64 ", out of memory %" SCNu64
				", malformed %" SCNu64 ", profile tables full %" SCNu64 ", cpu ceiling %" SCNu64
				", at exit %" SCNu64 ", stale %" SCNu64 "), %" SCNu64 " frames not symbolized",
				&t_kept, &t_dropped, &parts[0], &parts[1], &parts[2], &parts[3], &parts[4], &parts[5], &parts[6],
				&parts[7], &parts[8], &t_unsym),
			 12);
	assert_int_equal(s_kept, t_kept);
	assert_int_equal(s_dropped, t_dropped);
	assert_int_equal(s_unsym, t_unsym);
	assert_int_equal(t_dropped, 2047);
	assert_int_equal(t_unsym, 1000);
	assert_int_equal(parts[0] + parts[1] + parts[2] + parts[3] + parts[4] + parts[5] + parts[6] + parts[7] +
			 parts[8], t_dropped);
}

static char *render(const struct self_metrics *m)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	self_metrics_write_prometheus(m, f);
	fclose(f);
	return text;
}

/* /metrics counts the same: samples_dropped_total's series add up to the lines' dropped total. */
static void test_metrics_agree(void **state)
{
	struct self_metrics m;
	char *text, *line, *save = NULL;
	double dropped = 0, value;

	(void)state;
	fill(&m);
	text = render(&m);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!strncmp(line, "otelprofd_samples_dropped_total{", 32) && sscanf(strchr(line, ' '), "%lf", &value) == 1)
			dropped += value;
	free(text);
	assert_true(dropped == (double)self_metrics_dropped_samples(&m));
}

/* build_info and the standard process_* metrics, with this process's real figures. */
static void test_process_metrics(void **state)
{
	struct self_metrics m = { 0 };
	char *text;
	double start;
	const char *names[] = { "\nprocess_cpu_seconds_total ", "\nprocess_resident_memory_bytes ",
				"\nprocess_virtual_memory_bytes ", "\nprocess_open_fds ", "\nprocess_max_fds ",
				"\nprocess_start_time_seconds " };

	(void)state;
	self_metrics_read_process(&m, true);
	assert_true(m.open_fds >= 3);
	assert_true(m.max_fds >= m.open_fds);
	assert_true(m.virtual_bytes >= m.rss_bytes && m.rss_bytes > 0);
	start = m.start_time_seconds;
	assert_true(start > (double)time(NULL) - 600 && start <= (double)time(NULL) + 1);
	text = render(&m);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strstr(text, names[i]))
			fail_msg("no %s series in:\n%s", names[i], text);
	assert_non_null(strstr(text, "# TYPE process_cpu_seconds_total counter\n"));
	assert_non_null(strstr(text, "# TYPE process_start_time_seconds gauge\n"));
	assert_non_null(strstr(text, "\notelprofd_build_info{version=\"" OTELPROFD_VERSION "\",revision=\""));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_agree),
		cmocka_unit_test(test_metrics_agree),
		cmocka_unit_test(test_process_metrics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
