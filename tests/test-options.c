#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "options.h"

static enum options_result parse(struct options *o, const char *line)
{
	char buf[512], *argv[32];
	int argc = 0;
	FILE *devnull = fopen("/dev/null", "w");
	enum options_result r;

	snprintf(buf, sizeof(buf), "otelprofd %s", line);
	for (char *tok = strtok(buf, " "); tok && argc < 31; tok = strtok(NULL, " "))
		argv[argc++] = tok;
	argv[argc] = NULL;
	r = options_parse(o, argc, argv, devnull, devnull);
	fclose(devnull);
	return r;
}

static void test_defaults(void **state)
{
	struct options o;

	assert_int_equal(parse(&o, ""), OPTIONS_OK);
	assert_int_equal(o.frequency, 19);
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

	assert_int_equal(parse(&o, "--output=x.folded --duration=0"), OPTIONS_OK);
	assert_int_equal(o.format, OUTPUT_FOLDED);
	assert_int_equal(o.duration_ns, 0);
	options_free(&o);
	assert_int_equal(parse(&o, "-o -"), OPTIONS_OK);
	assert_int_equal(o.format, OUTPUT_TOP);
	options_free(&o);
}

static void test_bad_input(void **state)
{
	static const char *const bad[] = {
		"--frequency 0", "--frequency 10001", "--frequency abc", "--frequency -5", "-F 1x",
		"--pid abc", "--pid 0", "--pid 99999999", "--pid ,", "--pid -1", "--duration soon",
		"--duration -1s", "--duration 5parsecs", "-o out.txt", "--follow-children",
		"--ringbuf-size 100", "--top 0", "--no-such-flag", "stray", "-v -q", "--frequency",
		"--kubernetes yes", "--kubernetes",
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
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_help_version),
		cmocka_unit_test(test_parse_duration),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
