// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Metric families the rendering may hold: raised as the daemon grows. */
#define MAX_FAMILIES 256

#include "ops/self_metrics.h"

static char *render(const struct self_metrics *m)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	self_metrics_write_prometheus(m, f);
	fclose(f);
	return text;
}

/* Every line of text is a comment of the exposition format or "name{labels} value", and every
 * series has HELP and TYPE lines before it, once per name. Returns the number of series. */
static size_t check_format(const char *rendered)
{
	regex_t sample, comment;
	char *text = strdup(rendered), *save = NULL, seen[MAX_FAMILIES][96];
	size_t nseen = 0, nseries = 0;

	assert_int_equal(regcomp(&sample, "^(otelprofd|process)_[a-z0-9_]+(\\{[a-z_]+=\"[a-z0-9_.+-]+\"(,[a-z_]+=\"[a-z0-9_.+-]+\")*\\})? [0-9.e+-]+$",
				 REG_EXTENDED | REG_NOSUB), 0);
	assert_int_equal(regcomp(&comment, "^# (HELP|TYPE) (otelprofd|process)_[a-z0-9_]+ .+$", REG_EXTENDED | REG_NOSUB), 0);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#') {
			char name[96];

			assert_int_equal(regexec(&comment, line, 0, NULL, 0), 0);
			if (!strncmp(line, "# TYPE ", 7)) {
				char type[16];
				size_t len;

				assert_int_equal(sscanf(line + 7, "%95s %15s", name, type), 2);
				len = strlen(name);
				/* Prometheus naming: a counter's name ends in _total, and only a counter's. */
				print_message("%s %s\n", name, type);
				assert_int_equal(len > 6 && !strcmp(name + len - 6, "_total"), !strcmp(type, "counter"));
				for (size_t i = 0; i < nseen; i++)
					assert_string_not_equal(seen[i], name);
				assert_true(nseen < MAX_FAMILIES);
				strcpy(seen[nseen++], name);
			}
			continue;
		}
		print_message("%s\n", line);
		assert_int_equal(regexec(&sample, line, 0, NULL, 0), 0);
		{
			char name[96];
			bool typed = false;

			sscanf(line, "%95[a-z0-9_]", name);
			for (size_t i = 0; i < nseen; i++)
				typed |= !strcmp(seen[i], name);
			assert_true(typed);
		}
		nseries++;
	}
	free(text);
	regfree(&sample);
	regfree(&comment);
	return nseries;
}

static void test_prometheus_format(void **state)
{
	struct self_metrics m = { 0 };
	char *text;

	m.bpf[OTELPROF_CNT_SAMPLES] = 1234;
	m.bpf[OTELPROF_CNT_RINGBUF_FULL] = 7;
	m.aggregate.samples = 1200;
	m.aggregate.dropped_entries = 3;
	m.export_enabled = true;
	m.export.sent = 5;
	m.export.queued = 2;
	m.k8s_enabled = true;
	m.ready = true;
	m.rss_bytes = 10 << 20;
	text = render(&m);
	check_format(text);
	assert_non_null(strstr(text, "otelprofd_perf_events_total 1234\n"));
	assert_non_null(strstr(text, "otelprofd_samples_dropped_total{reason=\"ring_buffer_full\"} 7\n"));
	assert_non_null(strstr(text, "otelprofd_export_requests_total{status=\"sent\"} 5\n"));
	assert_non_null(strstr(text, "otelprofd_export_queue_requests 2\n"));
	assert_non_null(strstr(text, "otelprofd_k8s_events_total 0\n"));
	assert_non_null(strstr(text, "otelprofd_resident_memory_bytes 10485760\n"));
	assert_non_null(strstr(text, "otelprofd_ready 1\n"));
	free(text);

	/* Without export or Kubernetes, their series are left out. */
	m.export_enabled = m.k8s_enabled = false;
	text = render(&m);
	assert_null(strstr(text, "otelprofd_export_"));
	assert_null(strstr(text, "otelprofd_k8s_"));
	free(text);
}

/* With every optional part on (trace, off-CPU, export, Kubernetes), every series is written: the
 * series buffer is not full (a full one may have cut some), the last series of each part is there,
 * and so is every unwind end and every trace rejection reason. */
static void test_every_series(void **state)
{
	static const char *const last_of_part[] = {
		"otelprofd_ready ", "otelprofd_unwind_seconds_total ", "otelprofd_trace_table_full_total ",
		"otelprofd_export_queue_bytes ", "otelprofd_k8s_events_total ", "otelprofd_off_cpu_pending ",
	};
	struct self_metrics m = { 0 };
	size_t nseries;
	char *text, label[96];

	m.trace_enabled = m.off_cpu_enabled = m.export_enabled = m.k8s_enabled = true;
	text = render(&m);
	nseries = check_format(text);
	print_message("%zu series of at most %d\n", nseries, SELF_METRICS_MAX_SERIES);
	assert_true(nseries < SELF_METRICS_MAX_SERIES);
	for (size_t i = 0; i < sizeof(last_of_part) / sizeof(last_of_part[0]); i++) {
		print_message("%s\n", last_of_part[i]);
		assert_non_null(strstr(text, last_of_part[i]));
	}
	for (int end = 0; end < UNWIND_END_MAX; end++) {
		snprintf(label, sizeof(label), "otelprofd_unwind_walks_total{end=\"%s\"} ", unwind_end_name(end));
		assert_non_null(strstr(text, label));
	}
	for (int why = 0; why < TRACE_REJECT_MAX; why++) {
		snprintf(label, sizeof(label), "otelprofd_trace_rejected_total{reason=\"%s\"} ", trace_reject_names[why]);
		assert_non_null(strstr(text, label));
	}
	free(text);
}

static void test_summary(void **state)
{
	struct self_metrics prev = { 0 }, now = { 0 };
	char line[512];

	prev.aggregate.samples = 100;
	prev.cpu_seconds = 1.0;
	now.aggregate.samples = 160;
	now.aggregate.dropped_samples = 4;
	now.cpu_seconds = 1.3;
	now.rss_bytes = 3 << 20;
	now.export_enabled = true;
	now.export.sent = 6;
	now.export.queued = 1;
	now.ready = false;
	strcpy(now.not_ready_reason, "no profile delivered for 40 s");
	self_metrics_format_summary(&now, &prev, 60, line, sizeof(line));
	assert_string_equal(line, "stats: 60 samples (4 dropped), 0 not symbolized, cpu 0.50%, rss 3.0 MiB, "
				  "export 6 sent, 0 retried, 0 dropped, queue 1; not ready: no profile delivered for 40 s");
}

static void test_process_figures(void **state)
{
	struct self_metrics m = { 0 };

	self_metrics_read_process(&m, false);
	assert_true(m.rss_bytes > 0);
	assert_int_equal(m.open_fds, 0); /* walked only when a metrics server shows it */
	self_metrics_read_process(&m, true);
	assert_true(m.open_fds >= 3);
	assert_true(m.peak_rss_bytes >= m.rss_bytes / 2);
	assert_true(self_metrics_busy_cpu_ticks() > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prometheus_format),
		cmocka_unit_test(test_every_series),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_process_figures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
