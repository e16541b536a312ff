// SPDX-License-Identifier: Apache-2.0
/*
 * `otelprofd diff`'s readers and report: folded stacks and pprof (gzipped or not) into a flame
 * view's two slots; every kind of bad input refused with a reason (never a crash: random byte
 * flips over a valid pprof, raw and gzipped, run under ASan in CI); the table of changes and the
 * two-count folded lines.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "diff/diff_report.h"
#include "diff/readers.h"
#include "pprof_profile.pb-c.h"

struct ctx {
	struct flame *f;
	int view;
	char err[256];
	struct read_info info;
};

static struct ctx *ctx_new(bool diff)
{
	struct ctx *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	c->f = flame_new(0);
	assert_non_null(c->f);
	c->view = flame_add_view(c->f, "d", "samples", diff);
	assert_true(c->view >= 0);
	return c;
}

static void ctx_free(struct ctx *c)
{
	flame_free(c->f);
	free(c);
}

static int folded(struct ctx *c, unsigned slot, const char *text)
{
	return read_folded(text, strlen(text), &(struct read_target){ .flame = c->f, .view = c->view, .slot = slot }, &c->info, c->err,
			   sizeof(c->err));
}

static int pprof(struct ctx *c, const uint8_t *data, size_t len)
{
	return read_pprof(data, len, &(struct read_target){ .flame = c->f, .view = c->view }, &c->info, c->err, sizeof(c->err));
}

static char *report(struct ctx *c, bool top)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	assert_int_equal(top ? diff_write_top(c->f, c->view, 10, out) : diff_write_folded(c->f, c->view, out), 0);
	fclose(out);
	return text;
}

static void test_folded_and_report(void **state)
{
	struct ctx *c = ctx_new(true);
	char *text;

	(void)state;
	assert_int_equal(folded(c, 0, "app;main;hot 60\napp;main;cold 40\r\n\n# comment\n"), 0);
	assert_int_equal(c->info.total, 100);
	assert_string_equal(c->info.sample_type, "samples/count");
	assert_int_equal(folded(c, 1, "app;main;hot 10\napp;main;cold 40\napp;main;sys_read_[k] 50"), 0);
	assert_int_equal(c->info.stacks, 3);
	text = report(c, true);
	print_message("%s", text);
	/* hot: 60% -> 10%; sys_read (a kernel frame, its suffix gone): 0% -> 50%. */
	assert_non_null(strstr(text, "  60.00   10.00   -50.00  hot\n"));
	assert_non_null(strstr(text, "   0.00   50.00   +50.00  sys_read\n"));
	assert_non_null(strstr(text, "  40.00   40.00    +0.00  cold\n"));
	assert_true(strstr(text, "hot") < strstr(text, "cold"));
	free(text);
	text = report(c, false);
	assert_non_null(strstr(text, "app;main;hot 60 10\n"));
	assert_non_null(strstr(text, "app;main;sys_read_[k] 0 50\n"));
	free(text);
	ctx_free(c);
}

static void test_folded_errors(void **state)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "app;main;hot\n", "line 1: no count" },
		{ "app;main 12\napp;main;hot x1\n", "line 2: the count is not a number" },
		{ "app;main;hot -3\n", "line 1: the count is not a number" },
		{ "app;main;hot 99999999999999999999999\n", "line 1: the count is not a number" },
		{ "app;main;hot 0\n", "empty profile" },
		{ "", "empty profile" },
	};
	struct ctx *c;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = ctx_new(false);
		assert_int_equal(folded(c, 0, bad[i].text), -EINVAL);
		assert_non_null(strstr(c->err, bad[i].why));
		ctx_free(c);
	}
	c = ctx_new(false);
	assert_int_equal(read_folded("a;b 1\0c 2", 9, &(struct read_target){ .flame = c->f, .view = c->view }, &c->info, c->err,
				     sizeof(c->err)), -EINVAL);
	assert_non_null(strstr(c->err, "binary"));
	ctx_free(c);
}

/* A small pprof: process_name label, a location with an inlined frame, one with no line. */
static uint8_t *small_pprof(size_t *len, const char *type)
{
	typedef Perftools__Profiles__ValueType VT;
	char *strings[] = { "", (char *)type, "count", "process_name", "app", "outer", "inner", "/usr/bin/app" };
	VT vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT, *vts[] = { &vt };
	Perftools__Profiles__Function fn[2] = { PERFTOOLS__PROFILES__FUNCTION__INIT, PERFTOOLS__PROFILES__FUNCTION__INIT };
	Perftools__Profiles__Function *fns[] = { &fn[0], &fn[1] };
	Perftools__Profiles__Line ln[2] = { PERFTOOLS__PROFILES__LINE__INIT, PERFTOOLS__PROFILES__LINE__INIT };
	Perftools__Profiles__Line *lns[] = { &ln[0], &ln[1] };
	Perftools__Profiles__Mapping map = PERFTOOLS__PROFILES__MAPPING__INIT, *maps[] = { &map };
	Perftools__Profiles__Location loc[2] = { PERFTOOLS__PROFILES__LOCATION__INIT, PERFTOOLS__PROFILES__LOCATION__INIT };
	Perftools__Profiles__Location *locs[] = { &loc[0], &loc[1] };
	Perftools__Profiles__Label label = PERFTOOLS__PROFILES__LABEL__INIT, *labels[] = { &label };
	uint64_t ids[] = { 2, 1 };
	int64_t values[] = { 7 };
	Perftools__Profiles__Sample s = PERFTOOLS__PROFILES__SAMPLE__INIT, *ss[] = { &s };
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	uint8_t *buf;

	vt.type = 1;
	vt.unit = 2;
	fn[0].id = 10, fn[0].name = 5;
	fn[1].id = 11, fn[1].name = 6;
	ln[0].function_id = 11; /* inner, inlined into */
	ln[1].function_id = 10; /* outer */
	map.id = 1, map.memory_start = 0x1000, map.filename = 7;
	loc[0].id = 1, loc[0].n_line = 2, loc[0].line = lns;
	loc[1].id = 2, loc[1].mapping_id = 1, loc[1].address = 0x1234; /* leaf, not symbolized */
	label.key = 3, label.str = 4;
	s.n_location_id = 2, s.location_id = ids, s.n_value = 1, s.value = values, s.n_label = 1, s.label = labels;
	p.n_sample_type = 1, p.sample_type = vts, p.n_sample = 1, p.sample = ss, p.n_mapping = 1, p.mapping = maps;
	p.n_location = 2, p.location = locs, p.n_function = 2, p.function = fns;
	p.n_string_table = 8, p.string_table = strings;
	*len = perftools__profiles__profile__get_packed_size(&p);
	buf = malloc(*len);
	assert_non_null(buf);
	perftools__profiles__profile__pack(&p, buf);
	return buf;
}

static uint8_t *gzip(const uint8_t *data, size_t len, size_t *outlen)
{
	z_stream zs = { 0 };
	uint8_t *out = malloc(len + 256);

	assert_non_null(out);
	assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)(len + 256);
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	*outlen = zs.total_out;
	deflateEnd(&zs);
	return out;
}

static void test_pprof_read(void **state)
{
	size_t len, gzlen;
	uint8_t *raw = small_pprof(&len, "samples"), *gz = gzip(raw, len, &gzlen);
	struct ctx *c = ctx_new(true);
	char *text;

	(void)state;
	assert_int_equal(pprof(c, raw, len), 0);
	assert_int_equal(pprof(c, gz, gzlen), 0);
	assert_string_equal(c->info.sample_type, "samples/count");
	assert_int_equal(c->info.total, 7);
	text = report(c, false);
	/* Root first: outer, the inner function inlined into it, then the unsymbolized leaf. */
	assert_string_equal(text, "app;outer;inner;app+0x234 14 0\n");
	free(text);
	ctx_free(c);
	free(raw);
	free(gz);
}

static void test_pprof_errors(void **state)
{
	size_t len, gzlen;
	uint8_t *raw = small_pprof(&len, "samples"), *gz = gzip(raw, len, &gzlen);
	uint8_t garbage[300];
	struct ctx *c = ctx_new(false);

	(void)state;
	assert_int_equal(pprof(c, gz, gzlen / 2), -EINVAL);
	assert_string_equal(c->err, "truncated gzip data");
	memset(garbage, 0xff, sizeof(garbage));
	assert_int_equal(pprof(c, garbage, sizeof(garbage)), -EINVAL);
	assert_non_null(strstr(c->err, "not a pprof profile"));
	gz[12] ^= 0x55;
	assert_int_equal(pprof(c, gz, gzlen), -EINVAL);
	assert_non_null(strstr(c->err, "gzip"));
	/* An empty message is a valid Profile with nothing in it. */
	assert_int_equal(pprof(c, raw, 0), -EINVAL);
	assert_non_null(strstr(c->err, "no sample type"));
	ctx_free(c);
	free(raw);
	free(gz);
}

/* Random byte flips over the raw and gzipped file: each read succeeds or says why, and leaks
 * nothing (ASan). Deterministic: a fixed seed. */
static void test_pprof_mutations(void **state)
{
	size_t len, gzlen;
	uint8_t *raw = small_pprof(&len, "samples"), *gz = gzip(raw, len, &gzlen);
	unsigned seed = 19;

	(void)state;
	for (int i = 0; i < 3000; i++) {
		uint8_t *src = i & 1 ? gz : raw, *m;
		size_t n = i & 1 ? gzlen : len, cut = n - (size_t)(rand_r(&seed) % 3 == 0 ? rand_r(&seed) % n : 0);
		struct ctx *c = ctx_new(false);
		int r;

		m = malloc(n);
		memcpy(m, src, n);
		for (int k = 0; k < 1 + rand_r(&seed) % 4; k++)
			m[rand_r(&seed) % n] = (uint8_t)rand_r(&seed);
		r = pprof(c, m, cut);
		assert_true(r == 0 || r == -EINVAL || r == -ENOSPC);
		if (r)
			assert_true(c->err[0] != 0);
		ctx_free(c);
		free(m);
	}
	free(raw);
	free(gz);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_and_report),
		cmocka_unit_test(test_folded_errors),
		cmocka_unit_test(test_pprof_read),
		cmocka_unit_test(test_pprof_errors),
		cmocka_unit_test(test_pprof_mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
