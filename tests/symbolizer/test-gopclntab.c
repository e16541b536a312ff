// SPDX-License-Identifier: Apache-2.0
/*
 * gopclntab: tables built here in each format (Go 1.16, 1.18 and 1.20 layouts; the Go toolchain
 * of the test machine builds only one of them), each with an inlined call and a top frame, and
 * every truncation and single-byte corruption of them (which must be refused or read in bounds).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "go_unwind.h"
#include "gopclntab.h"
#include "unwind.h"

#define TEXT 0x401000ULL
#define TREE_VADDR 0x600000ULL  /* where the inline tree is "loaded" */
#define TABLE_VADDR 0x500000ULL
#define GOFUNC 0x5ff000ULL      /* Go 1.18+: funcdata offsets are from here */

struct buf {
	uint8_t b[1024];
	size_t n;
};

static size_t put(struct buf *b, const void *p, size_t n)
{
	size_t at = b->n;

	memcpy(b->b + b->n, p, n);
	b->n += n;
	return at;
}

static size_t put32(struct buf *b, uint32_t v)
{
	return put(b, &v, 4);
}

static size_t put64(struct buf *b, uint64_t v)
{
	return put(b, &v, 8);
}

static void set64(struct buf *b, size_t at, uint64_t v)
{
	memcpy(b->b + at, &v, 8);
}

static void align(struct buf *b, size_t a)
{
	while (b->n % a)
		b->b[b->n++] = 0;
}

struct fixture {
	struct buf table, tree, noptr;
	struct gopclntab_segment segs[2];
	struct gopclntab_input in;
	size_t text_start_at; /* Go 1.18+: where the header's textStart is in the table */
};

/*
 * Two functions: main.outer [TEXT, TEXT + 0x40) with main.inner inlined at [0x20, 0x30) (called
 * from the instruction at 0x08), and runtime.goexit [TEXT + 0x40, TEXT + 0x50), a top frame.
 * Files: a.go on [0, 0x20), b.go after; lines 10 on [0, 0x10), 20 after. main.outer's SP delta:
 * 0 on [0, 0x04) (before its prologue), 0x18 on [0x04, 0x3c), 0 on [0x3c, 0x40) (after its epilogue).
 */
static void build(struct fixture *fx, enum gopclntab_version v)
{
	static const char names[] = "\0main.outer\0main.inner\0runtime.goexit"; /* 1, 12, 23 */
	static const char files[] = "\0a.go\0b.go";                             /* 1, 6 */
	/* pc-value tables: (zigzag value delta, pc delta) pairs ending in 0 */
	static const uint8_t pcfile[] = { 2, 0x20, 2, 0x20, 0 };
	static const uint8_t pcln[] = { 22, 0x10, 20, 0x30, 0 };
	static const uint8_t pcinl[] = { 0, 0x20, 2, 0x10, 1, 0x10, 0 };
	static const uint8_t pczero[] = { 2, 0x10, 0 }; /* goexit: value 0 */
	static const uint8_t pcsp[] = { 2, 0x04, 0x30, 0x38, 0x2f, 0x04, 0 };
	struct buf *t = &fx->table;
	size_t hdr_words = v == GOPCLNTAB_GO116 ? 7 : 8, hdr, names_at, cu_at, files_at, pc_at, ln_at;
	size_t file_off, ln_off, inl_off, zero_off, sp_off, functab, f[2];
	bool new = v != GOPCLNTAB_GO116;

	memset(fx, 0, sizeof(*fx));
	put32(t, v == GOPCLNTAB_GO116 ? 0xfffffffa : v == GOPCLNTAB_GO118 ? 0xfffffff0 : 0xfffffff1);
	put(t, (uint8_t[]){ 0, 0, 1, 8 }, 4);
	hdr = t->n;
	for (size_t i = 0; i < hdr_words; i++)
		put64(t, 0);
	names_at = put(t, names, sizeof(names));
	align(t, 4);
	cu_at = put32(t, 1);
	put32(t, 6);
	files_at = put(t, files, sizeof(files));
	pc_at = t->n;
	put(t, "", 1); /* offset 0 means "no table" */
	file_off = put(t, pcfile, sizeof(pcfile)) - pc_at;
	ln_off = put(t, pcln, sizeof(pcln)) - pc_at;
	inl_off = put(t, pcinl, sizeof(pcinl)) - pc_at;
	zero_off = put(t, pczero, sizeof(pczero)) - pc_at;
	sp_off = put(t, pcsp, sizeof(pcsp)) - pc_at;
	align(t, 8);
	ln_at = t->n; /* pclntab: the function table, then the records */
	functab = t->n;
	for (int i = 0; i < 5; i++)
		new ? put32(t, 0) : put64(t, 0);
	for (int i = 0; i < 2; i++) {
		bool outer = i == 0;
		uint8_t flag = outer ? 0 : 1, nfuncdata = outer ? 4 : 0;

		align(t, 8);
		f[i] = t->n;
		new ? put32(t, outer ? 0 : 0x40) : put64(t, TEXT + (outer ? 0 : 0x40));
		put32(t, outer ? 1 : 23);                      /* nameoff */
		put32(t, 0), put32(t, 0);                      /* args, deferreturn */
		put32(t, (uint32_t)(outer ? sp_off : zero_off)); /* pcsp */
		put32(t, (uint32_t)(outer ? file_off : zero_off));
		put32(t, (uint32_t)(outer ? ln_off : zero_off));
		put32(t, outer ? 3 : 0);                       /* npcdata */
		put32(t, 0);                                   /* cuOffset */
		if (v == GOPCLNTAB_GO120)
			put32(t, 1);                           /* startLine */
		put(t, (uint8_t[]){ 0, v == GOPCLNTAB_GO116 ? 0 : flag, 0, nfuncdata }, 4);
		if (!outer)
			continue;
		put32(t, 0), put32(t, 0), put32(t, (uint32_t)inl_off);
		if (new) {
			put32(t, UINT32_MAX), put32(t, UINT32_MAX), put32(t, UINT32_MAX);
			put32(t, (uint32_t)(TREE_VADDR - GOFUNC));
		} else {
			align(t, 8);
			put64(t, 0), put64(t, 0), put64(t, 0), put64(t, TREE_VADDR);
		}
	}
	/* The function table: entries (pc, record offset) and the end pc. */
	for (int i = 0; i < 2; i++) {
		uint64_t pc = i ? 0x40 : 0;

		if (new) {
			memcpy(t->b + functab + 8 * i, &(uint32_t){ (uint32_t)pc }, 4);
			memcpy(t->b + functab + 8 * i + 4, &(uint32_t){ (uint32_t)(f[i] - ln_at) }, 4);
		} else {
			set64(t, functab + 16 * i, TEXT + pc);
			set64(t, functab + 16 * i + 8, f[i] - ln_at);
		}
	}
	if (new)
		memcpy(t->b + functab + 16, &(uint32_t){ 0x50 }, 4);
	else
		set64(t, functab + 32, TEXT + 0x50);
	/* header words */
	set64(t, hdr, 2);
	set64(t, hdr + 8, 2);
	{
		size_t w = hdr + 16;

		if (new) {
			set64(t, w, TEXT);
			w += 8;
		}
		set64(t, w, names_at), set64(t, w + 8, cu_at), set64(t, w + 16, files_at);
		set64(t, w + 24, pc_at), set64(t, w + 32, ln_at);
	}
	/* The inline tree: main.inner called from outer + 0x08. */
	if (v == GOPCLNTAB_GO120) {
		put32(&fx->tree, 0), put32(&fx->tree, 12), put32(&fx->tree, 8), put32(&fx->tree, 15);
	} else {
		put32(&fx->tree, 0xffff); /* parent -1, funcID 0, pad */
		put32(&fx->tree, 0), put32(&fx->tree, 10), put32(&fx->tree, 12), put32(&fx->tree, 8);
	}
	/* runtime.firstmoduledata: pointers to the table and its parts, gofunc at word 38 or 40. */
	if (new) {
		uint64_t words[41] = { TABLE_VADDR, TABLE_VADDR + names_at };

		words[22] = TEXT; /* text */

		words[4] = TABLE_VADDR + cu_at;
		words[7] = TABLE_VADDR + files_at;
		words[10] = TABLE_VADDR + pc_at;
		words[v == GOPCLNTAB_GO118 ? 38 : 40] = GOFUNC;
		put64(&fx->noptr, 0x1234); /* not at the section's start */
		put(&fx->noptr, words, sizeof(words));
	}
	fx->text_start_at = new ? hdr + 16 : 0;
	fx->segs[0] = (struct gopclntab_segment){ .vaddr = TREE_VADDR, .data = fx->tree.b, .size = fx->tree.n };
	fx->segs[1] = (struct gopclntab_segment){ .vaddr = GOFUNC, .data = fx->tree.b, .size = 1 };
	fx->in = (struct gopclntab_input){
		.table = t->b, .table_size = t->n, .table_vaddr = TABLE_VADDR,
		.text_vaddr = TEXT, .text_size = 0x50,
		.noptrdata = new ? fx->noptr.b : NULL, .noptrdata_size = fx->noptr.n,
		.segments = fx->segs, .nsegments = 2,
	};
}

static void check_version(enum gopclntab_version v)
{
	struct fixture fx;
	struct gopclntab_frame fr[8];
	struct gopclntab *t;
	bool truncated;
	unsigned n;

	build(&fx, v);
	t = gopclntab_open(&fx.in);
	assert_non_null(t);
	assert_int_equal(gopclntab_version(t), v);
	assert_true(gopclntab_has_inline_trees(t));
	assert_int_equal(gopclntab_nfuncs(t), 2);

	n = gopclntab_lookup(t, TEXT + 0x05, fr, 8, &truncated);
	assert_int_equal(n, 1);
	assert_string_equal(fr[0].function, "main.outer");
	assert_string_equal(fr[0].file, "a.go");
	assert_int_equal(fr[0].line, 10);

	/* Inside the inlined body: main.inner at b.go:20, called from main.outer at a.go:10. */
	n = gopclntab_lookup(t, TEXT + 0x24, fr, 8, &truncated);
	assert_int_equal(n, 2);
	assert_false(truncated);
	assert_string_equal(fr[0].function, "main.inner");
	assert_string_equal(fr[0].file, "b.go");
	assert_int_equal(fr[0].line, 20);
	assert_string_equal(fr[1].function, "main.outer");
	assert_string_equal(fr[1].file, "a.go");
	assert_int_equal(fr[1].line, 10);

	/* Room for one frame: the outermost function is kept. */
	n = gopclntab_lookup(t, TEXT + 0x24, fr, 1, &truncated);
	assert_int_equal(n, 1);
	assert_true(truncated);
	assert_string_equal(fr[0].function, "main.outer");

	n = gopclntab_lookup(t, TEXT + 0x34, fr, 8, &truncated);
	assert_int_equal(n, 1);
	assert_int_equal(fr[0].line, 20);

	assert_true(gopclntab_top_frame(t, TEXT + 0x44));
	assert_false(gopclntab_top_frame(t, TEXT + 0x24));
	n = gopclntab_lookup(t, TEXT + 0x44, fr, 8, &truncated);
	assert_int_equal(n, 1);
	assert_string_equal(fr[0].function, "runtime.goexit");

	assert_false(gopclntab_covers(t, TEXT + 0x50));
	assert_int_equal(gopclntab_lookup(t, TEXT + 0x50, fr, 8, &truncated), 0);
	assert_int_equal(gopclntab_lookup(t, TEXT - 1, fr, 8, &truncated), 0);
	gopclntab_free(t);
}

/* unwind_rule_fn over one table: the rule the Go unwinder compiles for pc. */
struct go_rules {
	struct gopclntab *t;
	struct cfi_rule rule;
	enum go_unwind_kind kinds[4];
	unsigned n;
};

static const struct cfi_rule *go_rule(void *ctx, uint64_t pc)
{
	struct go_rules *g = ctx;
	enum go_unwind_kind kind = go_unwind_rule(g->t, pc, &g->rule);

	if (g->n < 4)
		g->kinds[g->n++] = kind;
	return kind == GO_UNWIND_NONE ? NULL : &g->rule;
}

/* main.outer's SP delta at each pc, and a walk from inside its frame to runtime.goexit. */
static void check_sp_delta(enum gopclntab_version v)
{
	struct fixture fx;
	struct gopclntab_frame_info info;
	struct go_rules g = { 0 };
	struct unwind_result result;
	uint64_t stack[4] = { 0 }, ips[8];
	const uint64_t sp = 0x7ffd0000;

	build(&fx, v);
	assert_non_null(g.t = gopclntab_open(&fx.in));
	assert_true(gopclntab_frame_info(g.t, TEXT, &info));
	assert_int_equal(info.kind, GOPCLNTAB_FRAME_CALL);
	assert_int_equal(info.sp_delta, 0);
	assert_true(gopclntab_frame_info(g.t, TEXT + 0x10, &info));
	assert_int_equal(info.sp_delta, 0x18);
	assert_int_equal(info.entry, TEXT);
	assert_true(gopclntab_frame_info(g.t, TEXT + 0x3d, &info));
	assert_int_equal(info.sp_delta, 0);
	assert_true(gopclntab_frame_info(g.t, TEXT + 0x44, &info));
	assert_int_equal(info.kind, GOPCLNTAB_FRAME_TOP);
	assert_false(gopclntab_frame_info(g.t, TEXT + 0x50, &info));

	/* At outer + 0x10, 0x18 bytes pushed: the caller's bp at sp + 0x10, the return address (into
	 * runtime.goexit) at sp + 0x18. The walk ends at goexit, complete. */
	stack[2] = sp + 0x100;
	stack[3] = TEXT + 0x44;
	unwind_stack(&(struct unwind_regs){ .ip = TEXT + 0x10, .sp = sp, .bp = 1 },
		     &(struct unwind_window){ .sp = sp, .data = (const uint8_t *)stack, .size = sizeof(stack) },
		     go_rule, &g, ips, 8, &result);
	assert_int_equal(result.n, 2);
	assert_int_equal(result.end, UNWIND_END_ENTRY);
	assert_int_equal(ips[1], TEXT + 0x44);
	assert_int_equal(g.kinds[0], GO_UNWIND_STEP);
	assert_int_equal(g.kinds[1], GO_UNWIND_TOP);
	gopclntab_free(g.t);

	/* Go 1.26's external linker leaves textStart 0: runtime.firstmoduledata's text is the base. */
	if (v != GOPCLNTAB_GO116) {
		struct gopclntab_frame fr[2];
		bool truncated;

		set64(&fx.table, fx.text_start_at, 0);
		fx.in.text_vaddr = TEXT - 0x100; /* the section starts before Go's text (C code) */
		fx.in.text_size = 0x200;
		assert_non_null(g.t = gopclntab_open(&fx.in));
		assert_int_equal(gopclntab_lookup(g.t, TEXT + 0x05, fr, 2, &truncated), 1);
		assert_string_equal(fr[0].function, "main.outer");
		gopclntab_free(g.t);
	}
}

static void test_sp_delta(void **state)
{
	check_sp_delta(*(const enum gopclntab_version *)*state);
}

/* state: the enum gopclntab_version to build and read. */
static void test_version(void **state)
{
	check_version(*(const enum gopclntab_version *)*state);
}

/* Look everywhere a table may be read; strings returned lie inside the input. */
static void exercise(const struct gopclntab_input *in)
{
	struct gopclntab *t = gopclntab_open(in);
	struct gopclntab_frame fr[4];
	struct gopclntab_frame_info info;
	bool truncated;

	if (!t)
		return;
	for (uint64_t pc = TEXT - 2; pc < TEXT + 0x54; pc += 3) {
		unsigned n = gopclntab_lookup(t, pc, fr, 4, &truncated);

		for (unsigned i = 0; i < n; i++) {
			assert_non_null(fr[i].function);
			assert_true(strlen(fr[i].function) < in->table_size);
		}
		gopclntab_top_frame(t, pc);
		gopclntab_frame_info(t, pc, &info);
	}
	gopclntab_free(t);
}

/* Every truncation and every byte set to a few hostile values: refused or read in bounds. */
static void test_hostile(void **state)
{
	static const uint8_t values[] = { 0x00, 0xff, 0x80, 0x7f, 0x01 };

	(void)state;
	for (int v = GOPCLNTAB_GO116; v <= GOPCLNTAB_GO120; v++) {
		struct fixture fx;
		uint8_t *copy;

		build(&fx, (enum gopclntab_version)v);
		copy = malloc(fx.table.n);
		assert_non_null(copy);
		for (size_t len = 0; len < fx.table.n; len++) {
			struct gopclntab_input in = fx.in;

			/* A copy of exactly len bytes: ASan sees any read past it. */
			memcpy(copy, fx.table.b, len);
			in.table = copy;
			in.table_size = len;
			exercise(&in);
		}
		free(copy);
		for (size_t i = 0; i < fx.table.n; i++)
			for (size_t k = 0; k < sizeof(values); k++) {
				uint8_t saved = fx.table.b[i];

				fx.table.b[i] = values[k];
				exercise(&fx.in);
				fx.table.b[i] = saved;
			}
		for (size_t i = 0; i < fx.tree.n; i++) {
			fx.tree.b[i] ^= 0xff;
			exercise(&fx.in);
			fx.tree.b[i] ^= 0xff;
		}
	}
}

static void test_not_pclntab(void **state)
{
	static const uint8_t old[16] = { 0xfb, 0xff, 0xff, 0xff, 0, 0, 1, 8 }; /* Go 1.2-1.15 */
	static const uint8_t be[16] = { 0xff, 0xff, 0xff, 0xf0, 0, 0, 1, 8 };  /* big endian */
	struct gopclntab_input in = { .table = old, .table_size = sizeof(old) };

	(void)state;
	assert_null(gopclntab_open(&in));
	in.table = be;
	assert_null(gopclntab_open(&in));
	in.table = NULL;
	assert_null(gopclntab_open(&in));
}

int main(void)
{
	static enum gopclntab_version versions[] = { GOPCLNTAB_GO116, GOPCLNTAB_GO118, GOPCLNTAB_GO120 };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_version, &versions[0]),
		cmocka_unit_test_prestate(test_version, &versions[1]),
		cmocka_unit_test_prestate(test_version, &versions[2]),
		cmocka_unit_test_prestate(test_sp_delta, &versions[0]),
		cmocka_unit_test_prestate(test_sp_delta, &versions[1]),
		cmocka_unit_test_prestate(test_sp_delta, &versions[2]),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_not_pclntab),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
