// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/options.h"
#include "options-line.h"
#include "parse_units.h"

static enum options_result parse(struct options *o, const char *line)
{
	char msg[512];

	return parse_message(o, line, msg, sizeof(msg));
}

static void test_defaults(void **state)
{
	struct options o;

	assert_int_equal(parse(&o, ""), OPTIONS_OK);
	assert_int_equal(o.frequency, 99); /* the default 10 s are an ad hoc run */
	assert_int_equal(o.duration_ns, 10000000000ULL);
	assert_int_equal(o.format, OUTPUT_TOP);
	assert_null(o.output);
	assert_int_equal(o.npids, 0);
	assert_int_equal(o.kubernetes, KUBERNETES_AUTO);
	options_free(&o);
	assert_int_equal(parse(&o, "--kubernetes on"), OPTIONS_OK);
	assert_int_equal(o.kubernetes, KUBERNETES_ON);
	options_free(&o);
	assert_int_equal(parse(&o, "--kubernetes=off"), OPTIONS_OK);
	assert_int_equal(o.kubernetes, KUBERNETES_OFF);
	options_free(&o);
}

static char *write_config(const char *text);

/* 99 Hz without --frequency for a run with --pid or under a minute; 19 Hz for long and endless runs. */
static void test_ad_hoc_frequency(void **state)
{
	static const struct {
		const char *args;
		unsigned frequency;
	} cases[] = {
		{ "-d 59s", 99 }, { "-d 1m", 19 }, { "-d 0", 19 }, { "-d 1h -p 1", 99 }, { "-d 0 --pid=1", 99 },
		{ "-d 10s -F 19", 19 }, { "-p 1 -F 7", 7 }, { "--endpoint http://c:4317", 19 },
		{ "--endpoint http://c:4317 -d 30s", 99 },
	};
	const char *path = write_config("frequency = 49\n");
	struct options o;
	char line[256];

	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse(&o, cases[i].args), OPTIONS_OK);
		if (o.frequency != cases[i].frequency)
			fail_msg("'%s': %u Hz, expected %u", cases[i].args, o.frequency, cases[i].frequency);
		options_free(&o);
	}
	/* A frequency from the configuration file is a frequency asked for. */
	snprintf(line, sizeof(line), "--config %s -d 5s -p 1", path);
	assert_int_equal(parse(&o, line), OPTIONS_OK);
	assert_int_equal(o.frequency, 49);
	options_free(&o);
}

/* --pid takes every switch of its processes unless a probability is asked for; a host keeps 5%. */
static void test_ad_hoc_off_cpu_probability(void **state)
{
	static const struct {
		const char *args;
		double probability;
	} cases[] = {
		{ "--off-cpu -d 5s", OPTIONS_DEFAULT_OFF_CPU_PROBABILITY }, { "--off-cpu -p 1", 1.0 },
		{ "--off-cpu -p 1 --off-cpu-probability 0.2", 0.2 }, { "--off-cpu -d 0", OPTIONS_DEFAULT_OFF_CPU_PROBABILITY },
	};
	const char *path = write_config("off-cpu-probability = 0.5\n");
	struct options o;
	char line[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse(&o, cases[i].args), OPTIONS_OK);
		if (o.off_cpu_probability != cases[i].probability)
			fail_msg("'%s': probability %g, expected %g", cases[i].args, o.off_cpu_probability,
				 cases[i].probability);
		options_free(&o);
	}
	/* A probability from the configuration file is one asked for. */
	snprintf(line, sizeof(line), "--config %s --off-cpu -p 1", path);
	assert_int_equal(parse(&o, line), OPTIONS_OK);
	assert_true(o.off_cpu_probability == 0.5);
	options_free(&o);
}

static void test_flags(void **state)
{
	struct options o;
	char line[128];

	snprintf(line, sizeof(line), "-F 99 -d 500ms --pid %d,1 --follow-children -o out.pb.gz --top 5", getpid());
	assert_int_equal(parse(&o, line), OPTIONS_OK);
	assert_int_equal(o.frequency, 99);
	assert_int_equal(o.duration_ns, 500000000ULL);
	assert_int_equal(o.npids, 2);
	assert_int_equal(o.pids[0], getpid());
	assert_int_equal(o.pids[1], 1);
	assert_true(o.follow_children);
	assert_int_equal(o.format, OUTPUT_PPROF);
	assert_int_equal(o.top, 5);
	options_free(&o);

	assert_int_equal(parse(&o, ""), OPTIONS_OK);
	assert_int_equal(o.stack_copy, 16384);
	options_free(&o);
	assert_int_equal(parse(&o, "--stack-copy 64KiB"), OPTIONS_OK);
	assert_int_equal(o.stack_copy, 65536);
	options_free(&o);
	assert_int_equal(parse(&o, "--stack-copy=0"), OPTIONS_OK);
	assert_int_equal(o.stack_copy, 0);
	options_free(&o);
	assert_int_equal(parse(&o, "-d 0"), OPTIONS_OK); /* a host watched until stopped: the service's */
	assert_int_equal(o.symbol_cache, 32ULL << 20);
	options_free(&o);
	assert_int_equal(parse(&o, ""), OPTIONS_OK); /* the default 10 s are an ad hoc run */
	assert_int_equal(o.symbol_cache, 64ULL << 20);
	options_free(&o);
	assert_int_equal(parse(&o, "--pid 1 -d 0"), OPTIONS_OK);
	assert_int_equal(o.symbol_cache, 64ULL << 20);
	options_free(&o);
	assert_int_equal(parse(&o, "-d 10 --symbol-cache 16MiB"), OPTIONS_OK); /* asked for: kept */
	assert_int_equal(o.symbol_cache, 16ULL << 20);
	options_free(&o);
	assert_int_equal(parse(&o, "--symbol-cache 1GiB"), OPTIONS_OK);
	assert_int_equal(o.symbol_cache, 1ULL << 30);
	options_free(&o);
	assert_true(o.max_cpu == 0); /* no ceiling unless asked for */
	assert_int_equal(parse(&o, "--max-cpu 12.5"), OPTIONS_OK);
	assert_true(o.max_cpu == 12.5);
	options_free(&o);
	assert_int_equal(parse(&o, "--max-cpu=0"), OPTIONS_OK);
	assert_true(o.max_cpu == 0);
	options_free(&o);

	assert_int_equal(parse(&o, "--output=x.folded --duration=0"), OPTIONS_OK);
	assert_int_equal(o.format, OUTPUT_FOLDED);
	assert_int_equal(o.duration_ns, 0);
	options_free(&o);
	assert_int_equal(parse(&o, "-o -"), OPTIONS_OK);
	assert_int_equal(o.format, OUTPUT_TOP);
	options_free(&o);
	/* HTML by its name; --format whatever the name (before or after -o), to standard output too. */
	assert_int_equal(parse(&o, "-o flame.html"), OPTIONS_OK);
	assert_int_equal(o.format, OUTPUT_HTML);
	options_free(&o);
	assert_int_equal(parse(&o, "-o profile.txt --format=folded"), OPTIONS_OK);
	assert_int_equal(o.format, OUTPUT_FOLDED);
	options_free(&o);
	assert_int_equal(parse(&o, "--format html -o x.pb.gz"), OPTIONS_OK);
	assert_int_equal(o.format, OUTPUT_HTML);
	options_free(&o);
	assert_int_equal(parse(&o, "--format=pprof -o -"), OPTIONS_OK);
	assert_int_equal(o.format, OUTPUT_PPROF);
	options_free(&o);
	assert_int_equal(parse(&o, "--format=otlp"), OPTIONS_OK);
	assert_int_equal(o.format, OUTPUT_OTLP);
	assert_null(o.output);
	options_free(&o);
}

static void test_bad_input(void **state)
{
	static const char *const bad[] = {
		"--frequency 0", "--frequency 10001", "--frequency abc", "--frequency -5", "-F 1x",
		"--pid abc", "--pid 0", "--pid 99999999", "--pid ,", "--pid -1", "--duration soon",
		"--duration -1s", "--duration 5parsecs", "-o out.txt", "--follow-children", "--format=svg", "--format",
		"--format=html --endpoint=127.0.0.1:4317",
		"--ringbuf-size 100", "--top 0", "--no-such-flag", "stray", "-v -q", "--frequency",
		"--kubernetes yes", "--kubernetes", "--stack-copy 65537", "--stack-copy 1MiB", "--stack-copy -1",
		"--stack-copy lots", "--symbol-cache 1000", "--symbol-cache big",
		"--max-cpu 101", "--max-cpu -1", "--max-cpu 5%", "--max-cpu 1.2.3", "--max-cpu", "--max-cpu ''",
		/* Empty list elements. */
		"--pid 1,,2", "--pid 1,", "--pid ,1", "--pid +1",
		/* Ports 1-65535; IPv6 in brackets; host names of RFC 1123 characters. */
		"--metrics-address 127.0.0.1:99999", "--metrics-address 127.0.0.1:0", "--metrics-address ::::",
		"--metrics-address ::1:9464", "--metrics-address [::1]", "--metrics-address [::1]9464",
		"--metrics-address 127.0.0.1", "--metrics-address :9464", "--metrics-address bad_host:9464",
		"--metrics-address 127.0.0.1:9464x", "--metrics-address 127.0.0.1:+80", "--metrics-address 300.1.1.1:80",
		"--metrics-address [nothex]:80", "--metrics-address a..b:80", "--metrics-address -a:80",
		/* Trailing garbage, exponents, hex, infinities, a non-zero duration that rounds to 0, too long. */
		"--duration 10sx", "--duration 1e3s", "--duration 0x10s", "--duration inf", "--duration 1.5.2s",
		"--duration 0.1ns", "--duration 99999999999h", "--stats-interval 5 s", "--frequency 99999999999999999999",
		"--top 18446744073709551617", "--max-samples 1x",
		/* Control characters in any value. */
		"--cgroup /a\nb", "--output x\r.folded", "--container 0123456789ab\x1b",
		"--metrics-address 127.0.0.1:9464\r\n",
	};
	struct options o;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		print_message("%s\n", bad[i]);
		assert_int_equal(parse(&o, bad[i]), OPTIONS_USAGE);
		assert_null(o.pids);
	}
}

static void test_help_version(void **state)
{
	struct options o;

	assert_int_equal(parse(&o, "--help"), OPTIONS_EXIT);
	assert_int_equal(parse(&o, "-V"), OPTIONS_EXIT);
}

static void test_parse_duration(void **state)
{
	uint64_t ns;

	assert_int_equal(parse_duration("30s", &ns), 0);
	assert_int_equal(ns, 30000000000ULL);
	assert_int_equal(parse_duration("2m", &ns), 0);
	assert_int_equal(ns, 120000000000ULL);
	assert_int_equal(parse_duration("1h", &ns), 0);
	assert_int_equal(ns, 3600000000000ULL);
	assert_int_equal(parse_duration("1.5s", &ns), 0);
	assert_int_equal(ns, 1500000000ULL);
	assert_int_equal(parse_duration("7", &ns), 0);
	assert_int_equal(ns, 7000000000ULL);
	assert_int_equal(parse_duration("", &ns), -EINVAL);
	assert_int_equal(parse_duration("s", &ns), -EINVAL);
	assert_int_equal(parse_duration("nan", &ns), -EINVAL);
	assert_int_equal(parse_duration("1e30s", &ns), -EINVAL);
	assert_int_equal(parse_duration("10sx", &ns), -EINVAL);
	assert_int_equal(parse_duration("1e3", &ns), -EINVAL);
	assert_int_equal(parse_duration("0x10", &ns), -EINVAL);
	assert_int_equal(parse_duration(" 5s", &ns), -EINVAL);
	assert_int_equal(parse_duration("0.5ns", &ns), -EINVAL);
	assert_int_equal(parse_duration("0.0s", &ns), 0);
	assert_int_equal(ns, 0);
	assert_int_equal(parse_duration("2000000h", &ns), 0); /* 228 years: still fits */
	assert_int_equal(parse_duration("3000000h", &ns), -EINVAL);
}

static char *write_config(const char *text)
{
	static char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/test-options-%d.conf", getpid());
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

/* flags > OTEL_* environment > file > defaults */
static void test_config_precedence(void **state)
{
	struct options o;
	char line[256];
	const char *path = write_config("# comment\nfrequency = 99\nendpoint = http://from-file:4317\n"
					"export_interval = 30s\noutput_unused_key_check = x\n");

	/* An unknown key fails, with its line. */
	snprintf(line, sizeof(line), "--config %s", path);
	assert_int_equal(parse(&o, line), OPTIONS_USAGE);

	path = write_config("# comment\nfrequency = 99\nendpoint = http://from-file:4317\nexport_interval = 30s\n"
			    "follow-children = no\ntimeout = 7s\n");
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_TIMEOUT");
	assert_int_equal(parse(&o, line), OPTIONS_OK);
	assert_int_equal(o.frequency, 99);
	assert_non_null(strstr(o.export.target, "from-file"));
	assert_int_equal(o.export.interval_ns, 30000000000ULL);
	assert_int_equal(o.export.timeout_ns, 7000000000ULL);
	assert_false(o.follow_children);
	options_free(&o);

	/* The environment wins over the file; a flag wins over both. */
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://from-env:4317", 1);
	assert_int_equal(parse(&o, line), OPTIONS_OK);
	assert_non_null(strstr(o.export.target, "from-env"));
	options_free(&o);
	snprintf(line, sizeof(line), "--config %s -F 49 --endpoint http://from-flag:4317", path);
	assert_int_equal(parse(&o, line), OPTIONS_OK);
	assert_int_equal(o.frequency, 49);
	assert_non_null(strstr(o.export.target, "from-flag"));
	options_free(&o);
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");

	/* --check-config: exit 0 when valid. */
	snprintf(line, sizeof(line), "--check-config --config %s", path);
	assert_int_equal(parse(&o, line), OPTIONS_EXIT);
	unlink(path);
}

static void test_config_errors(void **state)
{
	static const char *const bad[] = {
		"frequency = 0\n", "frequency\n", "follow-children = maybe\n", "config = /etc/x.conf\n",
		"help = yes\n", "duration =\n", "pid = 99999999\n", "\"unbalanced = 1\n",
	};
	struct options o;
	char line[128], msg[512], want[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *path = write_config(bad[i]);

		print_message("%s", bad[i]);
		snprintf(line, sizeof(line), "--check-config --config %s", path);
		assert_int_equal(parse_message(&o, line, msg, sizeof(msg)), OPTIONS_USAGE);
		/* "otelprofd: FILE:1: reason" */
		snprintf(want, sizeof(want), "otelprofd: %s:1: ", path);
		print_message("  %s\n", msg);
		assert_memory_equal(msg, want, strlen(want));
		assert_true(strlen(msg) > strlen(want) + 5);
		unlink(path);
	}
	assert_int_equal(parse(&o, "--config /nonexistent/otelprofd.conf"), OPTIONS_USAGE);
}

/* Errors about two options name the file's line: "FILE:LINE: reason". */
static void test_config_pair_errors(void **state)
{
	static const struct {
		const char *file, *flags, *message; /* message: after "otelprofd: FILE" */
	} cases[] = {
		{ "follow-children = yes\n", "", ":1: follow-children needs pid" },
		{ "# a comment\noutput = x.folded\n\nendpoint = localhost:4317\n", "",
		  ":2: output and endpoint exclude each other (endpoint: line 4)" },
		{ "endpoint = localhost:4317\n", "-o x.folded", ":1: --output and endpoint exclude each other" },
		{ "verbose = yes\nquiet = yes\n", "", ":1: verbose and quiet exclude each other (quiet: line 2)" },
		{ "quiet = yes\n", "-v", ":1: --verbose and quiet exclude each other" },
		{ "frequency = 99\nclient-cert = /etc/hostname\n", "",
		  ":2: a client certificate needs its key and a key its certificate (--client-cert and --client-key)" },
		{ "headers = nokv\n", "", ":1: headers: entry 1: no '=' between key and value (expected key=value,key=value)" },
		{ "\n\nendpoint = http://\n", "",
		  ":3: endpoint: 'http://' is not a collector address: no host (examples: localhost:4317, "
		  "https://collector:4318)" },
		/* Nothing from the file involved: the flags' names, no location. */
		{ "frequency = 99\n", "--follow-children", "" },
	};
	struct options o;
	char line[256], msg[512], want[512];

	(void)state;
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
	unsetenv("OTEL_EXPORTER_OTLP_CLIENT_KEY");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *path = write_config(cases[i].file);

		snprintf(line, sizeof(line), "--check-config --config %s %s", path, cases[i].flags);
		if (cases[i].message[0])
			snprintf(want, sizeof(want), "otelprofd: %s%s", path, cases[i].message);
		else
			snprintf(want, sizeof(want), "otelprofd: --follow-children needs --pid");
		assert_int_equal(parse_message(&o, line, msg, sizeof(msg)), OPTIONS_USAGE);
		assert_string_equal(msg, want);
		unlink(path);
	}
}

static void test_good_addresses(void **state)
{
	static const char *const good[] = {
		"--metrics-address 127.0.0.1:9464", "--metrics-address [::1]:1", "--metrics-address localhost:65535",
		"--metrics-address 0.0.0.0:9464", "--metrics-address [::]:9464", "--metrics-address my-host.example.:80",
	};
	struct options o;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		print_message("%s\n", good[i]);
		assert_int_equal(parse(&o, good[i]), OPTIONS_OK);
		options_free(&o);
	}
}

/* A header value is never shown, nor a control character raw: a bad entry is named by its key, or
 * its position when it has none. */
static void test_secrets_not_shown(void **state)
{
	static const struct {
		const char *flags, *file, *env, *message;
	} cases[] = {
		{ "--headers authorization=Bearer%zzs3cret", NULL, NULL,
		  "otelprofd: headers: entry 1 ('authorization'): value is not percent-encoded properly" },
		{ "--headers a=1,,Bearer-s3cret", NULL, NULL, "otelprofd: headers: entry 3: no '=' between key and value" },
		{ "", NULL, "x=1,Authorization=Basic%s3cret",
		  "otelprofd: OTEL_EXPORTER_OTLP_HEADERS: entry 2 ('Authorization'): value is not percent-encoded" },
		{ "", "\nheaders = \"k=s3cret%g\"\n", NULL, ":2: headers: entry 1 ('k'): value is not percent-encoded" },
		{ "", "headers = k=s3cret\x1b\n", NULL, ":1: --headers: control characters are not allowed in the value" },
		{ "--endpoint https://user:s3cret@collector:4318", NULL, NULL,
		  "otelprofd: endpoint: 'https://***@collector:4318' is not a collector address: user:password@" },
		{ "", "Authorization: Basic s3cret== \n", NULL, ":1: not a valid key" },
		{ "--endpoint c:1\r\ns3cret", NULL, NULL, "otelprofd: --endpoint: control characters are not allowed" },
		{ "--no-such\x1b[31m", NULL, NULL, "otelprofd: unknown option '--no-such\\x1b[31m'" },
	};
	struct options o;

	(void)state;
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_PROFILES_HEADERS");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char line[256], *text = NULL;
		const char *path = cases[i].file ? write_config(cases[i].file) : NULL;

		if (cases[i].env)
			setenv("OTEL_EXPORTER_OTLP_HEADERS", cases[i].env, 1);
		snprintf(line, sizeof(line), "%s%s %s", path ? "--config " : "", path ? path : "", cases[i].flags);
		assert_int_equal(parse_stderr(&o, line, &text), OPTIONS_USAGE);
		print_message("%s\n", text);
		assert_null(strstr(text, "s3cret"));
		for (const char *t = text; *t; t++)
			assert_true(*t == '\n' || (unsigned char)*t >= 0x20);
		assert_non_null(strstr(text, cases[i].message));
		free(text);
		unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
		if (path)
			unlink(path);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_ad_hoc_frequency),
		cmocka_unit_test(test_ad_hoc_off_cpu_probability),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_good_addresses),
		cmocka_unit_test(test_secrets_not_shown),
		cmocka_unit_test(test_help_version),
		cmocka_unit_test(test_parse_duration),
		cmocka_unit_test(test_config_precedence),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_config_pair_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
