// SPDX-License-Identifier: Apache-2.0
/*
 * The output writers over a profile built from real addresses of this test program (symbolized
 * through /proc/self like any other process) and a kernel frame from a made-up kallsyms file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "pprof_profile.pb-c.h"
#include "profile/profile.h"
#include "output/writers.h"
#include "diff/readers.h"
#include "sample-record.h"

void leaf_fn(void);
void mid_fn(void);
void root_fn(void);

void __attribute__((noinline)) leaf_fn(void) { __asm__ volatile(""); }
void __attribute__((noinline)) mid_fn(void) { leaf_fn(); __asm__ volatile(""); }
void __attribute__((noinline)) root_fn(void) { mid_fn(); __asm__ volatile(""); }

static char kallsyms_path[] = "/tmp/test-writers-kallsymsXXXXXX";

struct fixture {
	struct aggregate *agg;
	struct symbolizer *sym;
	struct profile *profile;
};

static struct otelprof_sample sample(uint32_t tid, bool with_kernel)
{
	struct otelprof_sample s = sample_record((uint32_t)getpid(), tid, 0, "thread;x", "app");

	sample_set_stack(&s, leaf_fn, mid_fn, root_fn, with_kernel);
	return s;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct agg_limits limits = { 1000, 1 << 20, 1000 };
	struct otelprof_sample a = sample(100, false), b = sample(101, true);
	int fd = mkstemp(kallsyms_path);
	static const char ksyms[] = SAMPLE_KALLSYMS;

	assert_int_equal(write(fd, ksyms, sizeof(ksyms) - 1), sizeof(ksyms) - 1);
	close(fd);
	f->agg = aggregate_new(&limits);
	f->sym = symbolizer_new(&(struct symbolizer_config){ .kallsyms_path = kallsyms_path });
	assert_int_equal(aggregate_add(f->agg, &a, 3000), 0);
	assert_int_equal(aggregate_add(f->agg, &a, 1000), 0);
	assert_int_equal(aggregate_add(f->agg, &b, 2000), 0);
	f->profile = profile_build(f->agg, f->sym, &(struct profile_build_options){
		.frequency = 100, .time_unix_ns = 1000, .duration_ns = 5000 });
	assert_non_null(f->profile);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	profile_free(f->profile);
	symbolizer_free(f->sym);
	aggregate_free(f->agg);
	free(f);
	unlink(kallsyms_path);
	return 0;
}

static char *capture(int (*fn)(const struct profile *, FILE *), const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_int_equal(fn(p, out), 0);
	fclose(out);
	return buf;
}

static int top10(const struct profile *p, FILE *out)
{
	return write_top(p, 10, out);
}

static void test_profile_tables(void **state)
{
	struct fixture *f = *state;
	const struct profile *p = f->profile;

	assert_int_equal(p->nsamples, 2);
	assert_int_equal(p->total_count, 3);
	assert_int_equal(p->period_ns, 10000000);
	/* Zero element first; leaf_fn (its exact address, and the return address minus 1 under the
	 * kernel frame, which is the same), mid_fn, root_fn, one kernel location. */
	assert_int_equal(p->nlocations, 5);
	assert_int_equal(p->locations[0].type, PF_FRAME_NONE);
	assert_int_equal(p->nprocesses, 2);
	assert_string_equal(profile_string(p, 0), "");
	assert_string_equal(profile_string(p, p->processes[1].name), "app");
	/* Timestamps sorted. */
	assert_int_equal(p->samples[0].timestamps[0], 1000);
	assert_int_equal(p->samples[0].timestamps[1], 3000);
	/* The leaf is looked up at its exact address, callers at return address - 1. */
	assert_int_equal(p->locations[p->stack_locations[p->stacks[p->samples[0].stack].first]].address,
			 (uint64_t)(uintptr_t)&leaf_fn);
	assert_int_equal(p->locations[p->stack_locations[p->stacks[p->samples[0].stack].first + 1]].address,
			 (uint64_t)(uintptr_t)&mid_fn + 3);
}

static void test_folded(void **state)
{
	struct fixture *f = *state;
	char *text = capture(write_folded, f->profile);

	assert_string_equal(text,
			    "app;root_fn;mid_fn;leaf_fn 2\n"
			    "app;root_fn;mid_fn;leaf_fn;do_kernel_work_[k] 1\n");
	free(text);
}

/* A process renamed after its first samples (prctl(PR_SET_NAME) after a fork) bears the name of
 * its latest sample, whichever entry the build meets first. */
static void test_process_renamed(void **state)
{
	struct fixture *f = *state;
	struct agg_limits limits = { 1000, 1 << 20, 1000 };
	struct aggregate *agg = aggregate_new(&limits);
	struct otelprof_sample before = sample_record((uint32_t)getpid(), 100, 0, "thread;x", "parent"),
			       after = sample_record((uint32_t)getpid(), 101, 0, "thread;x", "child");
	struct profile *p;

	sample_set_stack(&before, leaf_fn, mid_fn, root_fn, false);
	sample_set_stack(&after, leaf_fn, mid_fn, root_fn, false);
	assert_int_equal(aggregate_add(agg, &before, 1000), 0);
	assert_int_equal(aggregate_add(agg, &after, 5000), 0);
	assert_int_equal(aggregate_add(agg, &before, 2000), 0);
	p = profile_build(agg, f->sym, &(struct profile_build_options){ .frequency = 100 });
	assert_non_null(p);
	assert_int_equal(p->nprocesses, 2);
	assert_string_equal(profile_string(p, p->processes[1].name), "child");
	profile_free(p);
	aggregate_free(agg);
}

/* The same profile built in slices (profile_builder_step() with a deadline already past: one entry a
 * step), from samples set aside while the next interval's go on (aggregate_swap_interval()). */
static void test_built_in_slices(void **state)
{
	struct fixture *f = *state;
	struct agg_limits limits = { 1000, 1 << 20, 1000 };
	struct aggregate *aside = aggregate_new(&limits);
	struct otelprof_sample later = sample(102, false);
	struct profile_builder *pb;
	struct profile *p;
	char *text;
	int steps = 0, r;

	assert_non_null(aside);
	aggregate_swap_interval(f->agg, aside);
	assert_int_equal(aggregate_entry_count(f->agg), 0);
	assert_int_equal(aggregate_add(f->agg, &later, 4000), 0); /* the next interval's */
	pb = profile_builder_new(aside, f->sym, &(struct profile_build_options){
		.frequency = 100, .time_unix_ns = 1000, .duration_ns = 5000 });
	assert_non_null(pb);
	while (!(r = profile_builder_step(pb, 1)))
		steps++;
	assert_int_equal(r, 1);
	assert_int_equal(steps, 1); /* two entries: one a step */
	p = profile_builder_finish(pb);
	assert_non_null(p);
	text = capture(write_folded, p);
	assert_string_equal(text,
			    "app;root_fn;mid_fn;leaf_fn 2\n"
			    "app;root_fn;mid_fn;leaf_fn;do_kernel_work_[k] 1\n");
	free(text);
	profile_free(p);
	/* Back as it was for the other tests; a builder dropped unfinished frees all. */
	aggregate_reset(f->agg);
	aggregate_swap_interval(f->agg, aside);
	assert_int_equal(aggregate_entry_count(f->agg), 2);
	profile_builder_free(profile_builder_new(f->agg, f->sym, &(struct profile_build_options){ .frequency = 100 }));
	aggregate_free(aside);
}

static void test_top(void **state)
{
	struct fixture *f = *state;
	char *text = capture(top10, f->profile);

	print_message("%s", text);
	assert_non_null(strstr(text, "3 samples from 1 process"));
	assert_non_null(strstr(text, "  66.67  100.00         2  leaf_fn"));
	assert_non_null(strstr(text, "  33.33   33.33         1  do_kernel_work"));
	assert_non_null(strstr(text, "   0.00  100.00         0  root_fn"));
	free(text);
}

static void test_html(void **state)
{
	struct fixture *f = *state;
	char *text = capture(write_html, f->profile);

	/* Self-contained: nothing from the network, and a policy that forbids it. */
	assert_null(strstr(text, "http:"));
	assert_null(strstr(text, "https:"));
	assert_non_null(strstr(text, "default-src 'none'"));
	assert_non_null(strstr(text, "<script type=\"application/json\" id=\"otelprofd-data\">"));
	/* The strings of the frames and their types; one view (no off-CPU waits). */
	assert_non_null(strstr(text, "\"leaf_fn\""));
	assert_non_null(strstr(text, "\"do_kernel_work\""));
	assert_non_null(strstr(text, "\"kernel\""));
	assert_non_null(strstr(text, "\"process\""));
	assert_non_null(strstr(text, "\"name\":\"On-CPU\""));
	assert_null(strstr(text, "Off-CPU"));
	assert_non_null(strstr(text, "\"total\":[3,0]"));
	free(text);
}

static int stack_line(void *ctx, const uint32_t *frames, size_t n, const uint64_t self[2])
{
	const struct flame *fl = ((void **)ctx)[0];
	FILE *out = ((void **)ctx)[1];

	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%s/%s", i ? ";" : "", flame_frame_name(fl, frames[i]), flame_frame_type(fl, frames[i]));
	fprintf(out, " %" PRIu64 "\n", self[0]);
	return 0;
}

/* What `otelprofd diff` reads of our own pprof: the stacks the folded output has, types kept. */
static void test_pprof_read_back(void **state)
{
	struct fixture *f = *state;
	struct flame *fl = flame_new(0);
	int view = flame_add_view(fl, "x", "samples", false);
	struct read_info info;
	uint8_t *buf;
	size_t len, tlen = 0;
	char err[128], *text = NULL;
	FILE *out = open_memstream(&text, &tlen);

	assert_int_equal(encode_pprof(f->profile, &buf, &len), 0);
	assert_int_equal(read_pprof(buf, len, &(struct read_target){ .flame = fl, .view = view }, &info, err, sizeof(err)), 0);
	assert_string_equal(info.sample_type, "samples/count");
	assert_int_equal(info.total, 3);
	assert_int_equal(flame_each_stack(fl, view, stack_line, (void *[]){ fl, out }), 0);
	fclose(out);
	assert_non_null(strstr(text, "app/process;root_fn/native;mid_fn/native;leaf_fn/native 2\n"));
	assert_non_null(strstr(text, "app/process;root_fn/native;mid_fn/native;leaf_fn/native;do_kernel_work/kernel 1\n"));
	/* Another sample type by name (diff --sample-type), and one the profile does not have. */
	assert_int_equal(read_pprof(buf, len, &(struct read_target){ .flame = fl, .view = view, .sample_type = "cpu" },
				    &info, err, sizeof(err)), 0);
	assert_string_equal(info.sample_type, "cpu/nanoseconds");
	assert_int_equal(read_pprof(buf, len, &(struct read_target){ .flame = fl, .view = view,
								     .sample_type = "inuse_space" }, &info, err,
				    sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--sample-type"));
	free(text);
	free(buf);
	flame_free(fl);
}

static void test_pprof(void **state)
{
	struct fixture *f = *state;
	Perftools__Profiles__Profile *pp;
	uint8_t *buf;
	size_t len;
	char path[] = "/tmp/test-writers-pprofXXXXXX";
	int fd = mkstemp(path);

	assert_int_equal(encode_pprof(f->profile, &buf, &len), 0);
	pp = perftools__profiles__profile__unpack(NULL, len, buf);
	assert_non_null(pp);
	assert_string_equal(pp->string_table[0], "");
	assert_int_equal(pp->n_sample_type, 2);
	assert_string_equal(pp->string_table[pp->sample_type[0]->type], "samples");
	assert_string_equal(pp->string_table[pp->sample_type[1]->unit], "nanoseconds");
	assert_int_equal(pp->period, 10000000);
	assert_int_equal(pp->n_sample, 2);
	assert_int_equal(pp->n_location, 4);
	for (size_t i = 0; i < pp->n_sample; i++) {
		Perftools__Profiles__Sample *s = pp->sample[i];

		assert_int_equal(s->n_value, 2);
		assert_int_equal(s->value[1], s->value[0] * 10000000);
		for (size_t j = 0; j < s->n_location_id; j++)
			assert_in_range(s->location_id[j], 1, pp->n_location);
		for (size_t j = 0; j < s->n_label; j++)
			if (!strcmp(pp->string_table[s->label[j]->key], "pid"))
				assert_int_equal(s->label[j]->num, getpid());
	}
	for (size_t i = 0; i < pp->n_location; i++) {
		assert_int_equal(pp->location[i]->id, i + 1);
		assert_in_range(pp->location[i]->mapping_id, 0, pp->n_mapping);
		for (size_t j = 0; j < pp->location[i]->n_line; j++)
			assert_in_range(pp->location[i]->line[j]->function_id, 1, pp->n_function);
	}
	perftools__profiles__profile__free_unpacked(pp, NULL);

	/* The file is the same message, gzipped. */
	close(fd);
	assert_int_equal(write_pprof_file(f->profile, path), 0);
	{
		gzFile gz = gzopen(path, "rb");
		uint8_t *back = malloc(len + 16);
		int n = gzread(gz, back, (unsigned)len + 16);

		assert_int_equal(n, (int)len);
		assert_memory_equal(back, buf, len);
		gzclose(gz);
		free(back);
	}
	unlink(path);
	free(buf);
	assert_int_not_equal(write_pprof_file(f->profile, "/nonexistent-dir/x.pb.gz"), 0);
}

static void test_empty_profile(void **state)
{
	struct agg_limits limits = { 10, 1 << 20, 10 };
	struct aggregate *agg = aggregate_new(&limits);
	struct symbolizer *sym = symbolizer_new(NULL);
	struct profile *p = profile_build(agg, sym, &(struct profile_build_options){ .frequency = 19 });
	char *text;
	uint8_t *buf;
	size_t len;

	assert_non_null(p);
	text = capture(top10, p);
	assert_non_null(strstr(text, "No samples"));
	free(text);
	text = capture(write_folded, p);
	assert_string_equal(text, "");
	free(text);
	assert_int_equal(encode_pprof(p, &buf, &len), 0);
	free(buf);
	profile_free(p);
	symbolizer_free(sym);
	aggregate_free(agg);
}

/* An unwound stack cut by the window: a distinct stack with a [truncated] root in every output. */
static void test_truncated(void **state)
{
	struct agg_limits limits = { 1000, 1 << 20, 1000 };
	struct aggregate *agg = aggregate_new(&limits);
	struct symbolizer *sym = symbolizer_new(&(struct symbolizer_config){ .kallsyms_path = kallsyms_path });
	struct otelprof_sample whole = sample(100, false), cut = sample(100, false);
	struct profile *p;
	char buf[8192];
	uint8_t *pb;
	size_t len;
	FILE *f;

	cut.flags |= OTELPROF_SAMPLE_USER_TRUNCATED;
	assert_int_equal(aggregate_add(agg, &whole, 1000), 0);
	assert_int_equal(aggregate_add(agg, &cut, 2000), 0);
	assert_int_equal(aggregate_add(agg, &cut, 3000), 0);
	assert_int_equal(aggregate_entry_count(agg), 2);
	p = profile_build(agg, sym, &(struct profile_build_options){ .frequency = 100, .duration_ns = 5000 });
	assert_non_null(p);
	assert_int_equal(p->counters.truncated_samples, 2);

	f = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(write_folded(p, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "app;[truncated];root_fn;mid_fn;leaf_fn 2\n"));
	assert_non_null(strstr(buf, "app;root_fn;mid_fn;leaf_fn 1\n"));

	f = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(write_top(p, 20, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "[truncated]"));

	assert_int_equal(encode_pprof(p, &pb, &len), 0);
	assert_non_null(memmem(pb, len, "[truncated]", 11));
	free(pb);
	profile_free(p);
	symbolizer_free(sym);
	aggregate_free(agg);
}

/* A frame in anonymous executable memory named by the process's perf map (JIT code): its
 * location says module "[jit]" and has the perf map's name, in the tables and the folded output. */
static void test_jit_frame(void **state)
{
	struct agg_limits limits = { 10, 1 << 20, 10 };
	struct aggregate *agg = aggregate_new(&limits);
	struct symbolizer *sym = symbolizer_new(&(struct symbolizer_config){ .kallsyms_path = kallsyms_path });
	void *code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct otelprof_sample s = sample(102, false);
	char path[64], *text;
	struct profile *p;
	const struct pf_location *loc = NULL;
	FILE *map;

	assert_true(code != MAP_FAILED);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	map = fopen(path, "w");
	assert_non_null(map);
	fprintf(map, "%lx 100 LazyCompile:~jsHot app.js:3\n", (unsigned long)(uintptr_t)code);
	fclose(map);
	s.user_depth = 2;
	s.user_ips[0] = (uint64_t)(uintptr_t)code + 0x10;
	s.user_ips[1] = (uint64_t)(uintptr_t)&root_fn + 4;
	assert_int_equal(aggregate_add(agg, &s, 1000), 0);
	p = profile_build(agg, sym, &(struct profile_build_options){ .frequency = 19 });
	assert_non_null(p);
	for (size_t i = 1; i < p->nlocations; i++)
		if (p->locations[i].address == s.user_ips[0])
			loc = &p->locations[i];
	assert_non_null(loc);
	assert_string_equal(profile_string(p, loc->module), "[jit]");
	assert_int_equal(loc->nlines, 1);
	assert_int_equal(loc->mapping, 0);
	text = capture(write_folded, p);
	assert_non_null(strstr(text, "LazyCompile:~jsHot app.js:3"));
	assert_null(strstr(text, "[unknown]"));
	free(text);
	profile_free(p);
	symbolizer_free(sym);
	aggregate_free(agg);
	munmap(code, 4096);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_tables),
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_built_in_slices),
		cmocka_unit_test(test_process_renamed),
		cmocka_unit_test(test_top),
		cmocka_unit_test(test_pprof),
		cmocka_unit_test(test_html),
		cmocka_unit_test(test_pprof_read_back),
		cmocka_unit_test(test_empty_profile),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_jit_frame),
	};

	root_fn();
	return cmocka_run_group_tests(tests, setup, teardown);
}
