// SPDX-License-Identifier: Apache-2.0
/*
 * CPython frames without a process: the 3.11, 3.12 and 3.13 layouts and 3.13's _Py_DebugOffsets,
 * code objects and line tables read from a fake process image (a buffer behind the read callback),
 * hostile images refused, the code-object cache's bounds, and a sample's Python frames put in place
 * of its interpreter frames.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "python_table.h"
#include "python_cache.h"
#include "python_code.h"
#include "python_layout.h"
#include "python_sample.h"
#include "symbolizer.h"

#define BASE 0x10000ULL
#define CODE BASE
#define QUALNAME (BASE + 0x1000)
#define FILENAME (BASE + 0x2000)
#define LINETABLE (BASE + 0x3000)
#define CODE2 (BASE + 0x4000)
#define CODE_TYPE 0xc0de0ULL

/* The fake process: its memory, and how often it was read. */
static uint8_t image[0x8000];
static unsigned reads;

static int fake_read(void *ctx, pid_t pid, uint64_t address, void *buf, size_t len)
{
	(void)ctx;
	(void)pid;
	reads++;
	if (address < BASE || address - BASE > sizeof(image) || len > sizeof(image) - (address - BASE))
		return -EFAULT;
	memcpy(buf, image + (address - BASE), len);
	return 0;
}

static void put64(uint64_t address, uint64_t v)
{
	memcpy(image + (address - BASE), &v, 8);
}

static void put32(uint64_t address, uint32_t v)
{
	memcpy(image + (address - BASE), &v, 4);
}

/* Lines 10.. : lasti 0-1 line 11, 2-4 line 12, 5 line 12, 6 none, 7 line 10, then none. */
static const uint8_t linetable[] = {
	0xe9, 0x02,             /* no-column form (13), 2 units, line +1 */
	0xda, 0x04, 0x08,       /* one-line form (11: +1), 3 units, columns */
	0x80, 0x01,             /* short form (0), 1 unit */
	0xf8,                   /* no location (15), 1 unit */
	0xf0, 0x05, 0x00, 0x01, 0x01, /* long form (14), 1 unit, line -2 */
};

/* A code object named "Outer.run" in "/srv/é.py" (a 2-byte str), first line 10, at CODE. */
static void build_image(const struct python_layout *l)
{
	static const uint16_t file[] = { '/', 's', 'r', 'v', '/', 0xe9, '.', 'p', 'y' };

	memset(image, 0, sizeof(image));
	put64(CODE + l->object_type, CODE_TYPE);
	put64(CODE + l->code_qualname, QUALNAME);
	put64(CODE + l->code_filename, FILENAME);
	put64(CODE + l->code_linetable, LINETABLE);
	put32(CODE + l->code_firstlineno, 10);
	put64(QUALNAME + l->unicode_length, 9);
	put32(QUALNAME + l->unicode_state, 1 << 2 | 1 << 5 | 1 << 6);
	memcpy(image + (QUALNAME - BASE) + l->unicode_ascii_data, "Outer.run", 9);
	put64(FILENAME + l->unicode_length, 9);
	put32(FILENAME + l->unicode_state, 2 << 2 | 1 << 5);
	memcpy(image + (FILENAME - BASE) + l->unicode_compact_data, file, sizeof(file));
	put64(LINETABLE + l->bytes_size, sizeof(linetable));
	memcpy(image + (LINETABLE - BASE) + l->bytes_data, linetable, sizeof(linetable));
	/* CODE2: the same names and table. */
	memcpy(image + (CODE2 - BASE), image + (CODE - BASE), 256);
}

static void test_layouts(void **state)
{
	struct python_layout l;

	(void)state;
	assert_int_equal(python_layout_for_version(0x030b02f0, &l), 0);
	assert_int_equal(l.frame_is_entry, 68);
	assert_int_equal(l.owner_cstack, PYTHON_NO_FIELD);
	assert_int_equal(l.code_adaptive, 184);
	assert_int_equal(python_layout_for_version(0x030c01f0, &l), 0);
	assert_int_equal(l.frame_code, 0);
	assert_int_equal(l.owner_cstack, 3);
	assert_int_equal(l.tstate_native_tid, 144);
	assert_int_equal(l.unicode_ascii_data, 40);
	assert_int_equal(python_layout_for_version(0x030d00f0, &l), 0);
	assert_int_equal(l.cframe_frame, PYTHON_NO_FIELD);
	assert_int_equal(l.tstate_frame, 72);
	assert_int_equal(l.code_adaptive, 200);
	assert_int_equal(python_layout_for_version(0x030a0df0, &l), -ENOTSUP);
	assert_int_equal(python_layout_for_version(0x030e00f0, &l), -ENOTSUP);
}

/* 3.13's debug offsets as the interpreter publishes them, one field moved. */
static void test_debug_offsets(void **state)
{
	uint64_t w[PYTHON_DEBUG_OFFSETS_BYTES / 8] = { 0 };
	struct python_layout l, table;

	(void)state;
	memcpy(w, "xdebugpy", 8);
	w[1] = 0x030d00f0;
	w[3] = 1000, w[5] = 632;                      /* runtime_state: size, interpreters_head */
	w[6] = 9000, w[9] = 7344;                     /* interpreter_state: size, threads_head */
	w[19] = 300, w[21] = 8, w[23] = 80, w[25] = 160; /* thread_state: size, next, current_frame, native id */
	w[28] = 80, w[29] = 8, w[30] = 0, w[31] = 56, w[33] = 70; /* frame */
	w[34] = 220, w[35] = 112, w[36] = 120, w[37] = 128, w[38] = 136, w[39] = 68, w[43] = 200; /* code */
	python_layout_for_version(0x030d00f0, &table);
	l = table;
	assert_int_equal(python_layout_apply_debug_offsets(&l, w, sizeof(w)), 0);
	assert_int_equal(l.tstate_frame, 80);
	assert_int_equal(l.interp_threads_head, 7344);
	assert_int_equal(l.code_adaptive, 200);
	/* Refused, the table kept: a wrong cookie, another version, a field outside its struct, short. */
	l = table;
	w[0] ^= 1;
	assert_int_equal(python_layout_apply_debug_offsets(&l, w, sizeof(w)), -EINVAL);
	w[0] ^= 1;
	w[1] = 0x030c00f0;
	assert_int_equal(python_layout_apply_debug_offsets(&l, w, sizeof(w)), -EINVAL);
	w[1] = 0x030d00f0;
	w[23] = 400;
	assert_int_equal(python_layout_apply_debug_offsets(&l, w, sizeof(w)), -EINVAL);
	w[23] = 80;
	assert_int_equal(python_layout_apply_debug_offsets(&l, w, 100), -EINVAL);
	w[2] = 1;
	assert_int_equal(python_layout_apply_debug_offsets(&l, w, sizeof(w)), -ENOTSUP);
	assert_memory_equal(&l, &table, sizeof(l));
}

static void check_code(uint32_t version)
{
	struct python_layout l;
	struct python_code *c;
	static const uint32_t lines[] = { 11, 11, 12, 12, 12, 12, 0, 10, 0, 0 };

	python_layout_for_version(version, &l);
	build_image(&l);
	assert_int_equal(python_code_read(&l, fake_read, NULL, 1, CODE, CODE_TYPE, &c), 0);
	assert_string_equal(c->qualname, "Outer.run");
	assert_string_equal(c->filename, "/srv/\xc3\xa9.py");
	assert_int_equal(c->firstlineno, 10);
	for (uint32_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		assert_int_equal(python_code_line(c, i), lines[i]);
	free(c);
	/* Another type, unreadable, not compact, a line table over the bound: refused. */
	assert_int_equal(python_code_read(&l, fake_read, NULL, 1, CODE, CODE_TYPE + 8, &c), -EINVAL);
	assert_int_equal(python_code_read(&l, fake_read, NULL, 1, 0x900000, 0, &c), -EFAULT);
	put32(QUALNAME + l.unicode_state, 1 << 2 | 1 << 6);
	assert_int_equal(python_code_read(&l, fake_read, NULL, 1, CODE, 0, &c), -EINVAL);
	put32(QUALNAME + l.unicode_state, 1 << 2 | 1 << 5 | 1 << 6);
	put64(LINETABLE + l.bytes_size, PYTHON_MAX_LINETABLE + 1);
	assert_int_equal(python_code_read(&l, fake_read, NULL, 1, CODE, 0, &c), -EINVAL);
	/* A name claiming more characters than the bound is cut, not refused. */
	put64(LINETABLE + l.bytes_size, sizeof(linetable));
	put64(QUALNAME + l.unicode_length, 1u << 30);
	assert_int_equal(python_code_read(&l, fake_read, NULL, 1, CODE, 0, &c), 0);
	assert_int_equal(strlen(c->qualname), PYTHON_MAX_NAME);
	free(c);
}

static void test_code_311(void **state)
{
	(void)state;
	check_code(0x030b02f0);
}

static void test_code_312(void **state)
{
	(void)state;
	check_code(0x030c01f0);
}

static void test_code_313(void **state)
{
	(void)state;
	check_code(0x030d00f0);
}

/* Garbage everywhere: every read refused or harmless, nothing crashes. */
static void test_garbage(void **state)
{
	struct python_layout l;
	struct python_code *c;

	(void)state;
	python_layout_for_version(0x030c01f0, &l);
	srand(7);
	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < sizeof(image); i++)
			image[i] = (uint8_t)rand();
		/* Pointers into the image now and then, so reads get past the first step. */
		put64(CODE + l.code_qualname, QUALNAME + (uint64_t)(rand() % 64));
		put64(CODE + l.code_linetable, LINETABLE);
		put64(LINETABLE + l.bytes_size, (uint64_t)(rand() % 4096));
		if (python_code_read(&l, fake_read, NULL, 1, CODE, 0, &c) == 0) {
			for (uint32_t i = 0; i < 64; i++)
				python_code_line(c, i);
			free(c);
		}
	}
}

static void test_cache(void **state)
{
	struct python_layout l;
	struct python_cache *c = python_cache_new(&(struct python_cache_config){ .read = fake_read, .max_bytes = 2048 });
	const struct python_code *code;
	uint64_t address;
	uint32_t line;
	unsigned before;

	(void)state;
	python_layout_for_version(0x030c01f0, &l);
	build_image(&l);
	assert_int_equal(python_cache_frame_address(c, 5, 1, CODE, CODE + l.code_adaptive, &address), -ENOENT);
	assert_int_equal(python_cache_attach(c, 5, 1, &l, CODE_TYPE), 0);
	assert_int_equal(python_cache_frame_address(c, 5, 1, CODE, CODE + l.code_adaptive + 2 * 5, &address), 0);
	assert_true(python_frame_address_is(address));
	assert_true(python_frame_address_is(address - 1)); /* as a return address */
	assert_int_equal(python_cache_lookup(c, 5, 1, address - 1, &code, &line), 0);
	assert_string_equal(code->qualname, "Outer.run");
	assert_int_equal(line, 12);
	/* A new frame's instruction pointer is before the first instruction: lasti 0. */
	assert_int_equal(python_cache_frame_address(c, 5, 1, CODE, CODE + l.code_adaptive - 2, &address), 0);
	assert_int_equal(python_cache_lookup(c, 5, 1, address, &code, &line), 0);
	assert_int_equal(line, 11);
	/* A bad code object is remembered: not read again. */
	assert_int_equal(python_cache_frame_address(c, 5, 1, 0x900000, 0x900100, &address), -EINVAL);
	before = reads;
	assert_int_equal(python_cache_frame_address(c, 5, 1, 0x900000, 0x900100, &address), -EINVAL);
	assert_int_equal(reads, before);
	assert_int_equal(python_cache_stats(c)->codes_bad, 1);
	/* Another process over the byte bound: the first one's codes go, read again when looked up. */
	assert_int_equal(python_cache_attach(c, 6, 1, &l, CODE_TYPE), 0);
	assert_int_equal(python_cache_frame_address(c, 6, 1, CODE2, CODE2 + l.code_adaptive, &address), 0);
	assert_true(python_cache_stats(c)->bytes <= 2048);
	assert_true(python_cache_stats(c)->codes_evicted > 0);
	assert_int_equal(python_cache_frame_address(c, 5, 1, CODE, CODE + l.code_adaptive, &address), 0);
	assert_int_equal(python_cache_lookup(c, 5, 1, address, &code, &line), 0);
	python_cache_forget(c, 5, 0);
	assert_false(python_cache_attached(c, 5, 1));
	assert_int_equal(python_cache_lookup(c, 5, 1, address, &code, &line), -ENOENT);
	assert_int_equal(python_cache_stats(c)->processes, 1);
	python_cache_free(c);
}

/* The table's interpreter: 3.12 with _PyEval_EvalFrameDefault at [0x5000, 0x6000). */
static int fake_find(void *ctx, const char *proc_root, uint32_t pid, uint64_t instance, struct python_process *out)
{
	(void)ctx;
	(void)proc_root;
	(void)pid;
	(void)instance;
	memset(out, 0, sizeof(*out));
	python_layout_for_version(0x030c01f0, &out->layout);
	out->version_hex = 0x030c01f0;
	out->runtime = 0x7000;
	out->eval_start = 0x5000;
	out->eval_end = 0x6000;
	return 0;
}

static int published;

static int fake_publish(void *ctx, uint32_t pid, uint64_t start_ns, const struct otelprof_python_proc *entry)
{
	(void)ctx;
	(void)pid;
	(void)start_ns;
	published += entry ? 1 : -1;
	return 0;
}

static void test_splice(void **state)
{
	struct python_table *t = python_table_new(&(struct python_table_config){
		.find = fake_find, .publish = fake_publish,
	});
	struct symbolizer *sym = symbolizer_new(&(struct symbolizer_config){
		.no_debuginfod = true, .python = { .read = fake_read },
	});
	static struct {
		struct otelprof_sample s;
		struct otelprof_python_frame py[5];
	} rec;
	static struct otelprof_sample out;
	struct python_sample_counters counters = { 0 };
	const struct python_entry *e;
	const struct otelprof_sample *r;
	struct python_layout l;
	struct sym_frame frame;

	(void)state;
	python_layout_for_version(0x030c01f0, &l);
	build_image(&l);
	e = python_table_check(t, 42, 99, 1, 1);
	assert_non_null(e);
	assert_int_equal(published, 1);
	assert_int_equal(symbolizer_python_attach(sym, 42, 1, &e->proc.layout, CODE_TYPE), 0);
	rec.s = (struct otelprof_sample){
		.hdr = { .kind = OTELPROF_RECORD_SAMPLE, .size = sizeof(rec) }, .pid = 42, .process_start_ns = 99,
		.flags = OTELPROF_SAMPLE_PYTHON, .python_slots = 5, .user_depth = 5,
		.user_ips = { 0x1000, 0x5011, 0x2000, 0x5021, 0x3000 },
	};
	/* Innermost first: CODE2 and CODE in the inner call, a marker, CODE in the outer call, a marker. */
	rec.py[0] = (struct otelprof_python_frame){ CODE2, CODE2 + l.code_adaptive + 4 };
	rec.py[1] = (struct otelprof_python_frame){ CODE, CODE + l.code_adaptive };
	rec.py[3] = (struct otelprof_python_frame){ CODE, CODE + l.code_adaptive + 14 };
	r = python_sample(t, sym, 1, &rec.s, &rec, sizeof(rec), &out, &counters);
	assert_ptr_equal(r, &out);
	assert_int_equal(out.user_depth, 6);
	assert_int_equal(out.user_ips[0], 0x1000);
	assert_true(python_frame_address_is(out.user_ips[1]));
	assert_true(python_frame_address_is(out.user_ips[2]));
	assert_int_equal(out.user_ips[3], 0x2000);
	assert_true(python_frame_address_is(out.user_ips[4]));
	assert_int_equal(out.user_ips[5], 0x3000);
	assert_int_equal(counters.frames, 3);
	assert_int_equal(symbolizer_user_instance(sym, 42, 1, out.user_ips[4] - 1, &frame), 0);
	assert_int_equal(frame.kind, SYM_FRAME_CPYTHON);
	assert_string_equal(frame.lines[0].function, "Outer.run");
	assert_int_equal(frame.lines[0].line, 10); /* lasti 7 */
	/* A tail that does not fit the record is refused, counted. */
	rec.s.python_slots = 200;
	assert_ptr_equal(python_sample(t, sym, 1, &rec.s, &rec, sizeof(rec), &out, &counters), &rec.s);
	assert_int_equal(counters.malformed, 1);
	python_table_retire(t, 42);
	assert_int_equal(published, 0);
	/* The same process after an exec (its first check may have read /proc after the exec, from a
	 * sample of the program before): the new instance is checked and published again. */
	assert_non_null(python_table_check(t, 42, 99, 2, 1));
	assert_int_equal(published, 1);
	assert_non_null(python_table_find(t, 42, 99, 2));
	assert_null(python_table_check(t, 42, 99, 2, 8));
	python_table_retire(t, 42);
	assert_int_equal(published, 0);
	python_table_forget(t, 42, 1);
	python_table_forget(t, 42, 2);
	assert_int_equal(python_table_count(t), 0);
	symbolizer_free(sym);
	python_table_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layouts), cmocka_unit_test(test_debug_offsets), cmocka_unit_test(test_code_311),
		cmocka_unit_test(test_code_312), cmocka_unit_test(test_code_313), cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_cache), cmocka_unit_test(test_splice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
