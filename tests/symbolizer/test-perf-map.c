#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "perf_map.h"

static struct perf_map *parse(const char *text)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct perf_map *m = perf_map_parse(f);

	fclose(f);
	return m;
}

static void test_parse_lookup(void **state)
{
	struct perf_map *m = parse(
		"7f0000001000 40 LazyCompile:~main /app/index.js:1\n"
		"7f0000000100 10 stub\n"
		"not a line\n"
		"7f0000002000 0 zero_size\n"
		"7f0000003000 20\n"
		"ffffffffffffffff 10 wraps\n"
		"7f0000001000 20 recompiled\n");

	assert_non_null(m);
	assert_int_equal(perf_map_count(m), 2);
	assert_int_equal(perf_map_malformed(m), 4);
	assert_string_equal(perf_map_lookup(m, 0x7f0000000105)->name, "stub");
	assert_null(perf_map_lookup(m, 0x7f0000000110));
	/* The later line for the same start wins. */
	assert_string_equal(perf_map_lookup(m, 0x7f0000001010)->name, "recompiled");
	assert_null(perf_map_lookup(m, 0x7f0000001020));
	assert_null(perf_map_lookup(m, 0x10));
	perf_map_free(m);
}

static void test_empty(void **state)
{
	struct perf_map *m = parse("");

	assert_non_null(m);
	assert_null(perf_map_lookup(m, 0x1000));
	perf_map_free(m);
	perf_map_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_lookup),
		cmocka_unit_test(test_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
