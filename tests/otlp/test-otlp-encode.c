// SPDX-License-Identifier: Apache-2.0
/*
 * The OTLP encoder over a profile of real addresses of this test program (symbolized through
 * /proc/self) and a kernel frame from a made-up kallsyms: the request decodes with our generated
 * code, passes every rule of the sheet (otlp_check), carries the fields the sheet lists, and is
 * split by resource under a size bound.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "otlp_check.h"
#include "output/otlp_encode.h"
#include "profile/profile.h"
#include "../sample-record.h"

void leaf_fn(void);
void mid_fn(void);
void root_fn(void);

void __attribute__((noinline)) leaf_fn(void) { __asm__ volatile(""); }
void __attribute__((noinline)) mid_fn(void) { leaf_fn(); __asm__ volatile(""); }
void __attribute__((noinline)) root_fn(void) { mid_fn(); __asm__ volatile(""); }

typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Prof;

static char kallsyms_path[] = "/tmp/test-otlp-kallsymsXXXXXX";

struct fixture {
	struct aggregate *agg;
	struct symbolizer *sym;
	struct profile *profile;
};

static struct otelprof_sample sample(uint32_t pid, uint32_t tid, uint32_t cpu, bool with_kernel)
{
	struct otelprof_sample s;
	char comm[OTELPROF_COMM_LEN];

	snprintf(comm, sizeof(comm), "worker-%u", tid);
	s = sample_record(pid, tid, cpu, comm, "app");
	sample_set_stack(&s, leaf_fn, mid_fn, root_fn, with_kernel);
	return s;
}

static void describe(void *ctx, struct profile *p, uint32_t process)
{
	(void)ctx;
	profile_add_process_attribute_string(p, process, "process.executable.name", "app");
	profile_add_process_attribute_string(p, process, "container.id", "c0ffee");
}

/* Samples of nprocs processes (this one, then made-up pids whose frames stay unsymbolized). */
static struct fixture *make_fixture(unsigned nprocs, unsigned threads_per_proc)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct agg_limits limits = { 100000, 1 << 24, 1000000 };
	static const char ksyms[] = SAMPLE_KALLSYMS;
	uint64_t t = 1000;

	f->agg = aggregate_new(&limits);
	f->sym = symbolizer_new(&(struct symbolizer_config){ .kallsyms_path = kallsyms_path });
	assert_non_null(f->agg);
	(void)ksyms;
	for (unsigned p = 0; p < nprocs; p++) {
		uint32_t pid = p ? 4000000 + p : (uint32_t)getpid();

		for (unsigned th = 0; th < threads_per_proc; th++) {
			struct otelprof_sample a = sample(pid, pid + th, th % 2, false), b = sample(pid, pid + th, 1, true);

			assert_int_equal(aggregate_add(f->agg, &a, t += 10), 0);
			assert_int_equal(aggregate_add(f->agg, &a, t += 10), 0);
			assert_int_equal(aggregate_add(f->agg, &b, t += 10), 0);
		}
	}
	f->profile = profile_build(f->agg, f->sym, &(struct profile_build_options){
		.frequency = 100, .time_unix_ns = 1000, .duration_ns = t, .describe_process = describe });
	assert_non_null(f->profile);
	return f;
}

static void free_fixture(struct fixture *f)
{
	profile_free(f->profile);
	symbolizer_free(f->sym);
	aggregate_free(f->agg);
	free(f);
}

static int group_setup(void **state)
{
	int fd = mkstemp(kallsyms_path);
	static const char ksyms[] = SAMPLE_KALLSYMS;

	(void)state;
	if (fd < 0 || write(fd, ksyms, sizeof(ksyms) - 1) != sizeof(ksyms) - 1)
		return -1;
	close(fd);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	unlink(kallsyms_path);
	return 0;
}

static const char *s(const Dict *d, int32_t i)
{
	assert_true(i >= 0 && (size_t)i < d->n_string_table);
	return d->string_table[i];
}

static const Opentelemetry__Proto__Common__V1__AnyValue *resource_attr(
	const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp, const char *key)
{
	for (size_t i = 0; i < rp->resource->n_attributes; i++)
		if (!strcmp(rp->resource->attributes[i]->key, key))
			return rp->resource->attributes[i]->value;
	return NULL;
}

static void test_one_process(void **state)
{
	struct fixture *f = make_fixture(1, 2);
	struct otlp_attr env[] = { { "service.name", "svc" }, { "container.id", "from-env" }, { "deployment.environment", "test" } };
	struct otlp_encode_options o = { .resource_attrs = env, .nresource_attrs = 3,
					 .max_message_size = OTLP_DEFAULT_MAX_MESSAGE_SIZE };
	struct otlp_batch batch;
	OtlpRequest *req;
	const Dict *d;
	const Prof *p;
	char why[256];
	bool seen_kernel = false, seen_native = false, seen_leaf = false;

	(void)state;
	assert_int_equal(otlp_encode(f->profile, &o, &batch), 0);
	assert_int_equal(batch.nmessages, 1);
	assert_int_equal(batch.messages[0].nsamples, 6);
	req = otlp_check_decode(batch.messages[0].data, batch.messages[0].len);
	assert_non_null(req);
	assert_int_equal(otlp_check_validate(req, why, sizeof(why)), 0);
	assert_int_equal(otlp_check_samples(req), 6);
	d = req->dictionary;

	assert_int_equal(req->n_resource_profiles, 1);
	assert_int_equal(resource_attr(req->resource_profiles[0], "process.pid")->int_value, getpid());
	assert_string_equal(resource_attr(req->resource_profiles[0], "container.id")->string_value, "c0ffee");
	assert_string_equal(resource_attr(req->resource_profiles[0], "service.name")->string_value, "svc");
	assert_string_equal(resource_attr(req->resource_profiles[0], "deployment.environment")->string_value, "test");
	assert_int_equal(req->resource_profiles[0]->n_scope_profiles, 1);
	assert_string_equal(req->resource_profiles[0]->scope_profiles[0]->scope->name, "otelprofd");
	assert_string_equal(req->resource_profiles[0]->scope_profiles[0]->scope->version, OTELPROFD_VERSION);
	p = req->resource_profiles[0]->scope_profiles[0]->profiles[0];
	assert_string_equal(s(d, p->sample_type->type_strindex), "samples");
	assert_string_equal(s(d, p->sample_type->unit_strindex), "count");
	assert_string_equal(s(d, p->period_type->type_strindex), "cpu");
	assert_string_equal(s(d, p->period_type->unit_strindex), "nanoseconds");
	assert_int_equal(p->period, 10000000);
	assert_int_equal(p->profile_id.len, 16);
	assert_true(p->time_unix_nano <= 1010);

	for (size_t i = 0; i < p->n_samples; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Sample *sm = p->samples[i];
		bool tid = false, name = false, cpu = false;

		assert_int_equal(sm->n_values, 0);
		assert_true(sm->n_timestamps_unix_nano > 0);
		for (size_t j = 0; j < sm->n_attribute_indices; j++) {
			const Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit *a =
				d->attribute_table[sm->attribute_indices[j]];
			const char *key = s(d, a->key_strindex);

			if (!strcmp(key, "thread.id"))
				tid = a->value->int_value == getpid() || a->value->int_value == getpid() + 1;
			if (!strcmp(key, "thread.name"))
				name = !strncmp(a->value->string_value, "worker-", 7);
			if (!strcmp(key, "cpu.logical_number"))
				cpu = a->value->int_value == 0 || a->value->int_value == 1;
		}
		assert_true(tid && name && cpu);
	}
	for (size_t i = 1; i < d->n_location_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Location *l = d->location_table[i];
		const Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit *a;

		assert_int_equal(l->n_attribute_indices, 1);
		a = d->attribute_table[l->attribute_indices[0]];
		assert_string_equal(s(d, a->key_strindex), "profile.frame.type");
		if (!strcmp(a->value->string_value, "kernel")) {
			seen_kernel = true;
			assert_int_equal(l->mapping_index, 0);
		} else {
			assert_string_equal(a->value->string_value, "native");
			seen_native = true;
			assert_true(l->mapping_index > 0);
			/* File-relative: far below this program's runtime addresses. */
			assert_true(l->address < (uint64_t)(uintptr_t)&leaf_fn);
			if (l->n_lines &&
			    !strcmp(s(d, d->function_table[l->lines[0]->function_index]->name_strindex), "leaf_fn"))
				seen_leaf = true;
		}
	}
	assert_true(seen_kernel && seen_native && seen_leaf);
	for (size_t i = 1; i < d->n_mapping_table; i++)
		assert_true(d->mapping_table[i]->memory_limit > d->mapping_table[i]->memory_start);

	otlp_check_free(req);
	otlp_batch_free(&batch);
	free_fixture(f);
}

static void test_split_by_resource(void **state)
{
	struct fixture *f = make_fixture(8, 3);
	struct otlp_encode_options o = { .max_message_size = 0 };
	struct otlp_batch whole, parts;
	uint64_t samples = 0;
	size_t resources = 0;

	(void)state;
	assert_int_equal(otlp_encode(f->profile, &o, &whole), 0);
	assert_int_equal(whole.nmessages, 1);
	assert_int_equal(whole.messages[0].nresources, 8);
	/* A bound below the whole request, above any one process alone. */
	o.max_message_size = whole.messages[0].len / 3;
	assert_int_equal(otlp_encode(f->profile, &o, &parts), 0);
	assert_true(parts.nmessages >= 3);
	assert_int_equal(parts.dropped_resources, 0);
	for (size_t i = 0; i < parts.nmessages; i++) {
		OtlpRequest *req = otlp_check_decode(parts.messages[i].data, parts.messages[i].len);
		char why[256];

		assert_true(parts.messages[i].len <= o.max_message_size);
		assert_non_null(req);
		assert_int_equal(otlp_check_validate(req, why, sizeof(why)), 0);
		samples += otlp_check_samples(req);
		resources += req->n_resource_profiles;
		otlp_check_free(req);
	}
	assert_int_equal(samples, f->profile->total_count);
	assert_int_equal(resources, 8);
	otlp_batch_free(&parts);

	/* Too small for any process: all dropped and counted, nothing sent. */
	o.max_message_size = 64;
	assert_int_equal(otlp_encode(f->profile, &o, &parts), 0);
	assert_int_equal(parts.nmessages, 0);
	assert_int_equal(parts.dropped_resources, 8);
	assert_int_equal(parts.dropped_samples, f->profile->total_count);
	otlp_batch_free(&parts);
	otlp_batch_free(&whole);
	free_fixture(f);
}

static void test_write_file(void **state)
{
	struct fixture *f = make_fixture(2, 1);
	struct otlp_encode_options o = { 0 };
	char path[] = "/tmp/test-otlp-fileXXXXXX";
	int fd = mkstemp(path);
	uint8_t buf[1 << 16];
	ssize_t n;
	OtlpRequest *req;

	(void)state;
	close(fd);
	assert_int_equal(otlp_write_file(f->profile, &o, path), 0);
	fd = open(path, O_RDONLY);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	unlink(path);
	req = otlp_check_decode(buf, (size_t)n);
	assert_non_null(req);
	assert_int_equal(otlp_check_validate(req, NULL, 0), 0);
	assert_int_equal(req->n_resource_profiles, 2);
	assert_int_equal(otlp_check_samples(req), 6);
	otlp_check_free(req);
	assert_true(otlp_write_file(f->profile, &o, "/nonexistent-dir/x.otlp") < 0);
	free_fixture(f);
}

/* Two profile samples whose stacks become one request stack: merged into one request sample. */
static void test_merge_same_identity(void **state)
{
	struct fixture *f = make_fixture(1, 1);
	struct profile *p = f->profile;
	struct otlp_encode_options o = { 0 };
	struct pf_sample copy = p->samples[0];
	struct otlp_batch batch;
	OtlpRequest *req;
	char why[256];

	(void)state;
	/* A second stack with the same locations (as when one file is mapped twice), same thread and CPU. */
	p->stacks = realloc(p->stacks, (p->nstacks + 1) * sizeof(*p->stacks));
	p->stacks[p->nstacks] = p->stacks[copy.stack];
	copy.stack = (uint32_t)p->nstacks++;
	copy.count = 2;
	copy.timestamps = malloc(2 * sizeof(uint64_t));
	copy.timestamps[0] = 1015;
	copy.timestamps[1] = 1016;
	p->samples = realloc(p->samples, (p->nsamples + 1) * sizeof(*p->samples));
	p->samples[p->nsamples++] = copy;
	p->total_count += 2;

	assert_int_equal(otlp_encode(p, &o, &batch), 0);
	req = otlp_check_decode(batch.messages[0].data, batch.messages[0].len);
	assert_non_null(req);
	if (otlp_check_validate(req, why, sizeof(why)))
		fail_msg("%s", why);
	assert_int_equal(otlp_check_samples(req), p->total_count);
	assert_int_equal(req->resource_profiles[0]->scope_profiles[0]->profiles[0]->n_samples, p->nsamples - 1);
	otlp_check_free(req);
	otlp_batch_free(&batch);
	free_fixture(f);
}

/* An executable mapping of a file that is no ELF (or is gone), at a fresh address of this process. */
static uint8_t *map_garbage(char *path, bool unlink_it)
{
	uint8_t junk[3 * 4096];
	int fd = mkstemp(path);
	void *base;

	assert_true(fd >= 0);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 131 + 7);
	assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	/* Offset one page into the file: the name must carry the file offset, not the address. */
	base = mmap(NULL, 2 * 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 4096);
	assert_true(base != MAP_FAILED);
	close(fd);
	if (unlink_it)
		unlink(path);
	return base;
}

/*
 * Frames in files the host could not read (not ELF; deleted, so it cannot be opened by path):
 * no Mapping without a build id is sent; such a frame has mapping_index 0 and a Function named
 * "file+0xOFFSET", and the request passes the validator (which fails any Mapping without one).
 */
static void test_unreadable_file(void **state)
{
	char junk_path[] = "/tmp/test-otlp-junkXXXXXX", gone_path[] = "/tmp/test-otlp-goneXXXXXX";
	uint8_t *junk = map_garbage(junk_path, false), *gone = map_garbage(gone_path, true);
	struct agg_limits limits = { 1000, 1 << 20, 10000 };
	struct aggregate *agg = aggregate_new(&limits);
	/* By path only: the deleted file cannot be opened (map_files would still reach it). */
	struct symbolizer *sym = symbolizer_new(&(struct symbolizer_config){ .kallsyms_path = kallsyms_path,
									     .no_map_files = true });
	struct otelprof_sample a = sample((uint32_t)getpid(), (uint32_t)getpid(), 0, false);
	struct otlp_encode_options o = { 0 };
	char junk_name[64], gone_name[64], why[256];
	bool seen_junk = false, seen_gone = false, seen_mid = false;
	struct otlp_batch batch;
	struct profile *p;
	OtlpRequest *req;
	const Dict *d;

	(void)state;
	assert_non_null(agg);
	assert_non_null(sym);
	a.user_depth = 4;
	a.user_ips[0] = (uint64_t)(uintptr_t)junk + 0x234;
	a.user_ips[1] = (uint64_t)(uintptr_t)gone + 0x1235; /* a return address: the call is 0x1234 */
	a.user_ips[2] = (uint64_t)(uintptr_t)&mid_fn + 4;
	a.user_ips[3] = (uint64_t)(uintptr_t)&root_fn + 4;
	assert_int_equal(aggregate_add(agg, &a, 1010), 0);
	p = profile_build(agg, sym, &(struct profile_build_options){
		.frequency = 100, .time_unix_ns = 1000, .duration_ns = 100 });
	assert_non_null(p);
	assert_true(p->counters.locations_unsymbolized >= 2);
	snprintf(junk_name, sizeof(junk_name), "%s+0x%x", strrchr(junk_path, '/') + 1, 0x1234);
	snprintf(gone_name, sizeof(gone_name), "%s+0x%x", strrchr(gone_path, '/') + 1, 0x2234);

	assert_int_equal(otlp_encode(p, &o, &batch), 0);
	assert_int_equal(batch.nmessages, 1);
	req = otlp_check_decode(batch.messages[0].data, batch.messages[0].len);
	assert_non_null(req);
	if (otlp_check_validate(req, why, sizeof(why)))
		fail_msg("%s", why);
	d = req->dictionary;
	for (size_t i = 1; i < d->n_location_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Location *l = d->location_table[i];
		const char *name;

		assert_int_equal(l->n_lines, 1);
		name = s(d, d->function_table[l->lines[0]->function_index]->name_strindex);
		if (!strcmp(name, junk_name) || !strcmp(name, gone_name)) {
			assert_int_equal(l->mapping_index, 0);
			seen_junk |= !strcmp(name, junk_name);
			seen_gone |= !strcmp(name, gone_name);
		} else if (!strcmp(name, "mid_fn")) {
			assert_true(l->mapping_index > 0);
			seen_mid = true;
		}
	}
	if (!seen_junk || !seen_gone)
		fail_msg("no function %s or %s", junk_name, gone_name);
	assert_true(seen_mid);
	/* Every mapping left is this test program's, with its build id. */
	assert_true(d->n_mapping_table >= 2);

	otlp_check_free(req);
	otlp_batch_free(&batch);
	profile_free(p);
	symbolizer_free(sym);
	aggregate_free(agg);
	munmap(junk, 2 * 4096);
	munmap(gone, 2 * 4096);
	unlink(junk_path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_process),
		cmocka_unit_test(test_split_by_resource),
		cmocka_unit_test(test_write_file),
		cmocka_unit_test(test_merge_same_identity),
		cmocka_unit_test(test_unreadable_file),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
