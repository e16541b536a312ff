// SPDX-License-Identifier: Apache-2.0
/*
 * The CFI stack walker on crafted registers, stacks and rules (chains, window ends, looping and
 * out-of-window CFI, PLT and signal-frame expressions, frame-pointer fallback, garbage), and the
 * symbolizer's unwinder on this test binary's own stack (built with -O2 -fomit-frame-pointer).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dwarf.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "elf_module.h"
#include "symbolizer.h"
#include "unwind.h"

#define UNWIND_TEST_DEPTH 127
#define BASE 0x7ffd00000000ULL /* where the crafted window "is" in the process */

/* Crafted rules by pc: a rule per code address range, the rest uncovered. */
struct fake {
	struct {
		uint64_t lo, hi;
		struct cfi_rule rule;
	} ranges[8];
	unsigned n;
	uint64_t lookups[256];
	unsigned nlookups;
};

static const struct cfi_rule *fake_rule(void *ctx, uint64_t pc)
{
	struct fake *f = ctx;

	if (f->nlookups < 256)
		f->lookups[f->nlookups++] = pc;
	for (unsigned i = 0; i < f->n; i++)
		if (pc >= f->ranges[i].lo && pc < f->ranges[i].hi)
			return &f->ranges[i].rule;
	return NULL;
}

static void op(struct cfi_rule *r, struct cfi_expr *e, uint8_t atom, int64_t n1, int32_t n2)
{
	assert_true(r->nops < CFI_MAX_OPS);
	if (!e->n)
		e->first = r->nops;
	r->ops[r->nops++] = (struct cfi_op){ .atom = atom, .n1 = n1, .n2 = n2 };
	e->n++;
}

/* The usual rule of a function body: CFA = rsp + cfa_off, return address at CFA - 8. */
static struct cfi_rule rsp_rule(int64_t cfa_off)
{
	struct cfi_rule r = { .found = true };

	r.cfa.kind = CFI_EXPR_VALUE;
	op(&r, &r.cfa, DW_OP_breg7, cfa_off, 0);
	r.ra.kind = CFI_EXPR_ADDRESS;
	op(&r, &r.ra, DW_OP_call_frame_cfa, 0, 0);
	op(&r, &r.ra, DW_OP_plus_uconst, -8, 0);
	r.bp.kind = CFI_EXPR_SAME;
	r.sp.kind = CFI_EXPR_VALUE;
	op(&r, &r.sp, DW_OP_call_frame_cfa, 0, 0);
	return r;
}

static struct cfi_rule entry_rule(void)
{
	struct cfi_rule r = rsp_rule(8);

	r.ra.kind = CFI_EXPR_UNDEFINED;
	r.ra.n = 0;
	return r;
}

static void put64(uint8_t *stack, size_t off, uint64_t v)
{
	memcpy(stack + off, &v, 8);
}

/* Frames f0 (leaf, 0x1000) -> ... each with a 32-byte frame, the last one the entry. */
static void build_chain(struct fake *f, uint8_t *stack, unsigned frames)
{
	f->n = 2;
	f->ranges[0].lo = 0x1000;
	f->ranges[0].hi = 0x1000 + 0x100 * (frames - 1);
	f->ranges[0].rule = rsp_rule(32);
	f->ranges[1].lo = f->ranges[0].hi;
	f->ranges[1].hi = f->ranges[0].hi + 0x100;
	f->ranges[1].rule = entry_rule();
	for (unsigned i = 0; i + 1 < frames; i++)
		put64(stack, i * 32 + 24, 0x1000 + 0x100 * (i + 1) + 0x10); /* return into the next function */
}

static void test_chain_to_entry(void **state)
{
	static uint8_t stack[4096];
	struct fake f = { 0 };
	struct unwind_window w = { .sp = BASE, .data = stack, .size = sizeof(stack), .complete = true };
	struct unwind_regs regs = { .ip = 0x1004, .sp = BASE, .bp = 0 };
	uint64_t ips[64];
	struct unwind_result res;

	build_chain(&f, stack, 25);
	assert_int_equal(unwind_stack(&regs, &w, fake_rule, &f, ips, 64, &res), 25);
	assert_int_equal(res.end, UNWIND_END_ENTRY);
	assert_int_equal(res.cfi_frames, 24);
	assert_int_equal(ips[0], 0x1004);
	for (unsigned i = 1; i < 25; i++)
		assert_int_equal(ips[i], 0x1000 + 0x100 * i + 0x10);
	/* The leaf is looked up at its ip, callers at the call (return address - 1). */
	assert_int_equal(f.lookups[0], 0x1004);
	assert_int_equal(f.lookups[1], 0x1110 - 1);
}

static void test_window_end(void **state)
{
	static uint8_t stack[4096];
	struct fake f = { 0 };
	struct unwind_window w = { .sp = BASE, .data = stack, .size = 32 * 10, .complete = false };
	struct unwind_regs regs = { .ip = 0x1004, .sp = BASE };
	uint64_t ips[64];
	struct unwind_result res;

	build_chain(&f, stack, 25);
	/* The window holds 10 frames: the walk stops there, marked truncated, with only real frames. */
	assert_int_equal(unwind_stack(&regs, &w, fake_rule, &f, ips, 64, &res), 11);
	assert_int_equal(res.end, UNWIND_END_TRUNCATED);
	for (unsigned i = 1; i < 11; i++)
		assert_int_equal(ips[i], 0x1000 + 0x100 * i + 0x10);
	/* The same bytes when the stack itself ended there: the CFI points past the stack's end. */
	w.complete = true;
	unwind_stack(&regs, &w, fake_rule, &f, ips, 64, &res);
	assert_int_equal(res.end, UNWIND_END_BAD_READ);
	/* The depth bound. */
	w.size = sizeof(stack);
	assert_int_equal(unwind_stack(&regs, &w, fake_rule, &f, ips, 7, &res), 7);
	assert_int_equal(res.end, UNWIND_END_DEPTH);
	assert_int_equal(unwind_stack(&regs, &w, fake_rule, &f, ips, 0, &res), 0);
}

/* Frames stepped by a rule from Go's SP-delta table are counted as such, and only the frames the
 * walk took: not a last lookup whose step failed (counting at lookup once made the CFI figure
 * wrap below zero when the Go figure was subtracted from it). */
static void test_go_sp_frames_counted(void **state)
{
	static uint8_t stack[4096];
	struct fake f = { 0 };
	struct unwind_window w = { .sp = BASE, .data = stack, .size = 32 * 10, .complete = false };
	struct unwind_regs regs = { .ip = 0x1004, .sp = BASE };
	uint64_t ips[64];
	struct unwind_result res;

	(void)state;
	build_chain(&f, stack, 25);
	f.ranges[0].rule.go_sp_delta = true;
	assert_int_equal(unwind_stack(&regs, &w, fake_rule, &f, ips, 64, &res), 11);
	assert_int_equal(res.end, UNWIND_END_TRUNCATED);
	assert_int_equal(res.go_sp_frames, 10);
	assert_int_equal(res.cfi_frames, 0);
	assert_int_equal(f.nlookups, 11);
	w.size = sizeof(stack);
	assert_int_equal(unwind_stack(&regs, &w, fake_rule, &f, ips, 64, &res), 25);
	assert_int_equal(res.go_sp_frames, 24);
	assert_int_equal(res.cfi_frames, 0);
}

static void test_looping_and_outside_cfi(void **state)
{
	static uint8_t stack[4096];
	struct fake f = { .n = 1 };
	struct unwind_window w = { .sp = BASE, .data = stack, .size = sizeof(stack), .complete = true };
	struct unwind_regs regs = { .ip = 0x1004, .sp = BASE };
	uint64_t ips[16];
	struct unwind_result res;

	f.ranges[0].lo = 0x1000;
	f.ranges[0].hi = 0x2000;
	/* CFA = rsp + 8 and a return address into the same function: sp grows, so it must end by the
	 * window, never loop. */
	f.ranges[0].rule = rsp_rule(8);
	for (size_t i = 0; i < sizeof(stack); i += 8)
		put64(stack, i, 0x1010);
	unwind_stack(&regs, &w, fake_rule, &f, ips, 16, &res);
	assert_int_equal(res.end, UNWIND_END_DEPTH);
	assert_int_equal(unwind_stack(&regs, &w, fake_rule, &f, ips, 1000 < 16 ? 1000 : 16, &res), 16);
	/* CFA = rsp + 0: the caller's sp does not grow. */
	f.ranges[0].rule = rsp_rule(0);
	put64(stack, 0, 0x1010);
	unwind_stack(&regs, &w, fake_rule, &f, ips, 16, &res);
	assert_true(res.end == UNWIND_END_NOT_GROWING || res.end == UNWIND_END_BAD_READ);
	/* CFA below the window (rsp - 4096): the saved return address is outside it. */
	f.ranges[0].rule = rsp_rule(-4096);
	assert_int_equal(unwind_stack(&regs, &w, fake_rule, &f, ips, 16, &res), 1);
	assert_int_equal(res.end, UNWIND_END_BAD_READ);
	/* CFA far above the window. */
	f.ranges[0].rule = rsp_rule(1 << 30);
	w.complete = false;
	unwind_stack(&regs, &w, fake_rule, &f, ips, 16, &res);
	assert_int_equal(res.end, UNWIND_END_TRUNCATED);
	/* An expression on a register the sample does not carry (rbx). */
	f.ranges[0].rule = rsp_rule(8);
	f.ranges[0].rule.ops[f.ranges[0].rule.cfa.first].atom = DW_OP_breg3;
	unwind_stack(&regs, &w, fake_rule, &f, ips, 16, &res);
	assert_int_equal(res.end, UNWIND_END_BAD_EXPR);
	/* An expression that underflows its stack, and one that overflows it. */
	f.ranges[0].rule = rsp_rule(8);
	f.ranges[0].rule.ops[f.ranges[0].rule.cfa.first].atom = DW_OP_plus;
	unwind_stack(&regs, &w, fake_rule, &f, ips, 16, &res);
	assert_int_equal(res.end, UNWIND_END_BAD_EXPR);
	{
		struct cfi_rule r = rsp_rule(8);

		r.nops = 0;
		r.cfa.n = r.ra.n = r.sp.n = 0;
		for (int i = 0; i < 12; i++)
			op(&r, &r.cfa, DW_OP_lit1, 0, 0);
		f.ranges[0].rule = r;
		unwind_stack(&regs, &w, fake_rule, &f, ips, 16, &res);
		assert_int_equal(res.end, UNWIND_END_BAD_EXPR);
	}
	/* A rule whose expression claims more ops than the rule holds. */
	f.ranges[0].rule = rsp_rule(8);
	f.ranges[0].rule.cfa.n = CFI_MAX_OPS;
	unwind_stack(&regs, &w, fake_rule, &f, ips, 16, &res);
	assert_int_equal(res.end, UNWIND_END_BAD_EXPR);
	/* A kernel address as return address. */
	f.ranges[0].rule = rsp_rule(8);
	put64(stack, 0, 0xffffffff81000000ULL);
	assert_int_equal(unwind_stack(&regs, &w, fake_rule, &f, ips, 16, &res), 1);
	assert_int_equal(res.end, UNWIND_END_BAD_IP);
}

/* The x86-64 PLT stub's CFA: rsp + 8, plus 8 more after the push (ip & 15 >= 11). */
static void test_plt_expression(void **state)
{
	static uint8_t stack[256];
	struct fake f = { .n = 2 };
	struct unwind_window w = { .sp = BASE, .data = stack, .size = sizeof(stack), .complete = true };
	uint64_t ips[8];
	struct unwind_result res;
	struct cfi_rule r = rsp_rule(8);
	static const uint8_t plt[] = { DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, DW_OP_lit11,
				       DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus };

	r.nops = 0;
	r.cfa.n = 0;
	r.ra.n = 0;
	r.sp.n = 0;
	for (size_t i = 0; i < sizeof(plt); i++)
		op(&r, &r.cfa, plt[i], plt[i] == DW_OP_breg7 ? 8 : 0, 0);
	r.ra.kind = CFI_EXPR_ADDRESS;
	op(&r, &r.ra, DW_OP_call_frame_cfa, 0, 0);
	op(&r, &r.ra, DW_OP_plus_uconst, -8, 0);
	r.sp.kind = CFI_EXPR_UNDEFINED; /* the caller's sp is the CFA */
	f.ranges[0].lo = 0x3000;
	f.ranges[0].hi = 0x3100;
	f.ranges[0].rule = r;
	f.ranges[1].lo = 0x5000;
	f.ranges[1].hi = 0x5100;
	f.ranges[1].rule = entry_rule();
	put64(stack, 0, 0x5020);   /* return address when nothing is pushed */
	put64(stack, 8, 0x5040);   /* ... and after the stub pushed one word */
	unwind_stack(&(struct unwind_regs){ .ip = 0x3006, .sp = BASE }, &w, fake_rule, &f, ips, 8, &res);
	assert_int_equal(res.end, UNWIND_END_ENTRY);
	assert_int_equal(ips[1], 0x5020);
	unwind_stack(&(struct unwind_regs){ .ip = 0x300b, .sp = BASE }, &w, fake_rule, &f, ips, 8, &res);
	assert_int_equal(res.end, UNWIND_END_ENTRY);
	assert_int_equal(ips[1], 0x5040);
}

/* A signal trampoline: registers saved in a frame at rsp + off; the interrupted pc is exact. */
static void test_signal_frame(void **state)
{
	static uint8_t stack[1024];
	struct fake f = { .n = 3 };
	struct unwind_window w = { .sp = BASE, .data = stack, .size = sizeof(stack), .complete = true };
	uint64_t ips[8];
	struct unwind_result res;
	struct cfi_rule r = { .found = true, .signal_frame = true };

	/* As glibc's __restore_rt: CFA = [rsp + 160]; rip at rsp + 168, rbp at rsp + 120, rsp at rsp + 160. */
	r.cfa.kind = CFI_EXPR_VALUE;
	op(&r, &r.cfa, DW_OP_breg7, 160, 0);
	op(&r, &r.cfa, DW_OP_deref, 0, 0);
	r.ra.kind = CFI_EXPR_ADDRESS;
	op(&r, &r.ra, DW_OP_call_frame_cfa, 0, 0);
	op(&r, &r.ra, DW_OP_breg7, 168, 0);
	r.bp.kind = CFI_EXPR_ADDRESS;
	op(&r, &r.bp, DW_OP_breg7, 120, 0);
	r.sp.kind = CFI_EXPR_ADDRESS;
	op(&r, &r.sp, DW_OP_breg7, 160, 0);
	f.ranges[0] = (typeof(f.ranges[0])){ .lo = 0x7000, .hi = 0x7010, .rule = r };
	/* The interrupted function: its first instruction (CFA = rsp + 8). */
	f.ranges[1] = (typeof(f.ranges[1])){ .lo = 0x8000, .hi = 0x8100, .rule = rsp_rule(8) };
	f.ranges[2] = (typeof(f.ranges[2])){ .lo = 0x9000, .hi = 0x9100, .rule = entry_rule() };
	put64(stack, 160, BASE + 512);  /* interrupted rsp */
	put64(stack, 168, 0x8000);      /* interrupted rip: the first byte of its function */
	put64(stack, 120, 0x1234);      /* interrupted rbp */
	put64(stack, 512, 0x9010);      /* its return address */
	unwind_stack(&(struct unwind_regs){ .ip = 0x7000, .sp = BASE }, &w, fake_rule, &f, ips, 8, &res);
	assert_int_equal(res.end, UNWIND_END_ENTRY);
	assert_int_equal(res.n, 3);
	assert_int_equal(ips[1], 0x8000);
	assert_int_equal(ips[2], 0x9010);
	/* After the trampoline the exact pc is looked up, not pc - 1 (which is another function). */
	assert_int_equal(f.lookups[1], 0x8000);
}

/* No CFI: the frame-pointer chain, which ends at bp == 0; garbage bp stops the walk. */
static void test_frame_pointer_fallback(void **state)
{
	static uint8_t stack[1024];
	struct fake f = { 0 };
	struct unwind_window w = { .sp = BASE, .data = stack, .size = sizeof(stack), .complete = true };
	uint64_t ips[8];
	struct unwind_result res;

	put64(stack, 64, BASE + 128);  /* saved bp */
	put64(stack, 72, 0x4444);
	put64(stack, 128, 0);
	put64(stack, 136, 0x5555);
	unwind_stack(&(struct unwind_regs){ .ip = 0x3333, .sp = BASE, .bp = BASE + 64 }, &w, fake_rule, &f, ips, 8, &res);
	assert_int_equal(res.end, UNWIND_END_ENTRY);
	assert_int_equal(res.n, 3);
	assert_int_equal(res.fp_frames, 2);
	assert_int_equal(ips[1], 0x4444);
	assert_int_equal(ips[2], 0x5555);
	/* bp below sp, misaligned, or pointing back down: no garbage frames. */
	unwind_stack(&(struct unwind_regs){ .ip = 0x3333, .sp = BASE, .bp = BASE - 64 }, &w, fake_rule, &f, ips, 8, &res);
	assert_int_equal(res.n, 1);
	assert_int_equal(res.end, UNWIND_END_NO_RULE);
	unwind_stack(&(struct unwind_regs){ .ip = 0x3333, .sp = BASE, .bp = BASE + 65 }, &w, fake_rule, &f, ips, 8, &res);
	assert_int_equal(res.n, 1);
	put64(stack, 128, BASE + 64);  /* a bp chain that loops */
	unwind_stack(&(struct unwind_regs){ .ip = 0x3333, .sp = BASE, .bp = BASE + 64 }, &w, fake_rule, &f, ips, 8, &res);
	assert_true(res.n <= 3);
	assert_int_not_equal(res.end, UNWIND_END_ENTRY);
}

/* Random rules over random stacks: every walk ends within its bounds, and every frame but the first
 * is a value read from the window. */
static void test_garbage(void **state)
{
	static const uint8_t atoms[] = { DW_OP_breg7, DW_OP_breg6, DW_OP_breg16, DW_OP_breg3, DW_OP_lit8, DW_OP_lit0,
					 DW_OP_plus, DW_OP_minus, DW_OP_deref, DW_OP_call_frame_cfa, DW_OP_plus_uconst,
					 DW_OP_dup, DW_OP_swap, DW_OP_drop, DW_OP_shl, DW_OP_ge, DW_OP_bra, 0xff,
					 DW_OP_deref_size, DW_OP_consts, DW_OP_bregx, DW_OP_over };
	static uint8_t stack[2048];
	uint64_t ips[32];
	struct unwind_result res;

	srand(42);
	for (int iter = 0; iter < 20000; iter++) {
		struct fake f = { .n = 1 };
		struct cfi_rule *r = &f.ranges[0].rule;
		struct cfi_expr *exprs[] = { &r->cfa, &r->ra, &r->bp, &r->sp };
		struct unwind_window w = { .sp = BASE, .data = stack, .size = (size_t)(rand() % 2049),
					   .complete = rand() & 1 };

		for (size_t i = 0; i < sizeof(stack); i++)
			stack[i] = (uint8_t)(rand() & 3 ? rand() : 0);
		/* Some words that look like stack and code addresses. */
		for (int i = 0; i < 32; i++)
			put64(stack, (size_t)(rand() % 255) * 8, rand() & 1 ? BASE + (uint64_t)(rand() % 4096) : 0x1000 + (uint64_t)(rand() % 4096));
		f.ranges[0].lo = 0x1000;
		f.ranges[0].hi = 0x1000 + (uint64_t)(rand() % 8192);
		r->found = rand() % 8 != 0;
		r->signal_frame = rand() % 8 == 0;
		for (int e = 0; e < 4; e++) {
			int n = rand() % 5;

			exprs[e]->kind = (uint8_t)(rand() % 5);
			for (int i = 0; i < n && r->nops < CFI_MAX_OPS; i++) {
				uint8_t atom = atoms[rand() % sizeof(atoms)];
				int64_t n1 = (rand() % 64) - 16;
				int32_t n2 = rand() % 17;

				op(r, exprs[e], atom, n1, n2);
			}
		}
		unwind_stack(&(struct unwind_regs){ .ip = 0x1000 + (uint64_t)(rand() % 4096), .sp = BASE,
						    .bp = BASE + (uint64_t)(rand() % 2048) },
			     &w, fake_rule, &f, ips, 32, &res);
		assert_true(res.n <= 32);
		assert_true(res.end < UNWIND_END_MAX);
		for (size_t i = 1; i < res.n; i++) {
			int in_window = 0;

			for (size_t off = 0; off + 8 <= w.size && !in_window; off++)
				in_window = !memcmp(stack + off, &ips[i], 8);
			/* A return address rule that computes the value itself (val_expression) may yield any
			 * value; every other rule reads it from the window. */
			assert_true(in_window || ips[i] < 256 || r->ra.kind == CFI_EXPR_VALUE);
		}
	}
}

/* ---- the symbolizer's unwinder on this process's own stack ---- */

static struct {
	uint64_t ip, sp, bp;
	uint8_t stack[65536];
	size_t size;
	bool complete;
} captured;

static uint64_t stack_end(uint64_t sp)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long lo, hi;
	char line[512];
	uint64_t end = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && sp >= lo && sp < hi)
			end = hi;
	fclose(f);
	return end;
}

/* Copy the live stack word by word: the frames above hold AddressSanitizer redzones that memcpy
 * would report; the copy must read them like the BPF program does. */
__attribute__((no_sanitize("address"))) static void copy_stack(uint8_t *to, uint64_t from, size_t n)
{
	for (size_t i = 0; i + 8 <= n; i += 8) {
		uint64_t word = *(volatile const uint64_t *)(uintptr_t)(from + i);

		memcpy(to + i, &word, 8);
	}
}

/* Save the registers here and the stack above: what the BPF program does at a sample. */
__attribute__((noinline)) static void capture(void)
{
	uint64_t end;
	size_t n;

	__asm__ volatile("lea (%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(captured.ip), "=r"(captured.sp), "=r"(captured.bp));
	end = stack_end(captured.sp);
	n = end - captured.sp < sizeof(captured.stack) ? end - captured.sp : sizeof(captured.stack);
	copy_stack(captured.stack, captured.sp, n);
	captured.size = n;
	captured.complete = n < sizeof(captured.stack);
}

/* A chain of distinct functions 24 deep, compiled without frame pointers (see meson.build). */
#define CHAIN(name, next) \
	__attribute__((noinline)) int name(int x); \
	__attribute__((noinline)) int name(int x) { volatile int pad[3] = { x, x, x }; int r = next(x + pad[1]); __asm__ volatile("" ::: "memory"); return r + 1; }
int chain_leaf(int x);
__attribute__((noinline)) int chain_leaf(int x)
{
	capture();
	__asm__ volatile("" ::: "memory");
	return x;
}
CHAIN(chain23, chain_leaf) CHAIN(chain22, chain23) CHAIN(chain21, chain22) CHAIN(chain20, chain21)
CHAIN(chain19, chain20) CHAIN(chain18, chain19) CHAIN(chain17, chain18) CHAIN(chain16, chain17)
CHAIN(chain15, chain16) CHAIN(chain14, chain15) CHAIN(chain13, chain14) CHAIN(chain12, chain13)
CHAIN(chain11, chain12) CHAIN(chain10, chain11) CHAIN(chain9, chain10) CHAIN(chain8, chain9)
CHAIN(chain7, chain8) CHAIN(chain6, chain7) CHAIN(chain5, chain6) CHAIN(chain4, chain5)
CHAIN(chain3, chain4) CHAIN(chain2, chain3) CHAIN(chain1, chain2)

static const char *name_of(struct symbolizer *s, uint64_t ip, bool exact)
{
	static struct sym_frame frame;

	if (symbolizer_user(s, getpid(), exact ? ip : ip - 1, &frame) || !frame.nlines)
		return "?";
	return frame.lines[frame.nlines - 1].function ? frame.lines[frame.nlines - 1].function : "?";
}

/* The captured registers and window, unwound as pid's. */
static size_t unwind_captured(struct symbolizer *s, pid_t pid, uint64_t *ips, struct unwind_result *res)
{
	return symbolizer_unwind(s, pid, &(struct sym_unwind_input){
		.ip = captured.ip, .sp = captured.sp, .bp = captured.bp, .stack = captured.stack,
		.stack_size = captured.size, .stack_complete = captured.complete,
	}, ips, UNWIND_TEST_DEPTH, res);
}

static void test_self_unwind(void **state)
{
	struct symbolizer *s = symbolizer_new(NULL);
	uint64_t ips[UNWIND_TEST_DEPTH];
	struct unwind_result res;
	size_t n;
	char want[32];

	assert_non_null(s);
	chain1(1);
	n = unwind_captured(s, getpid(), ips, &res);
	assert_int_equal(res.end, UNWIND_END_ENTRY);
	assert_string_equal(name_of(s, ips[0], true), "capture");
	assert_string_equal(name_of(s, ips[1], false), "chain_leaf");
	for (int i = 23; i >= 1; i--) {
		snprintf(want, sizeof(want), "chain%d", i);
		assert_string_equal(name_of(s, ips[25 - i], false), want);
	}
	assert_string_equal(name_of(s, ips[25], false), "test_self_unwind");
	/* ... through cmocka and libc to the entry. */
	assert_true(n > 27);
	{
		bool main_seen = false;

		for (size_t i = 26; i < n; i++)
			main_seen |= !strcmp(name_of(s, ips[i], false), "main");
		assert_true(main_seen);
	}
	assert_int_equal(symbolizer_stats(s)->unwind_ends[UNWIND_END_ENTRY], 1);
	assert_true(symbolizer_stats(s)->unwind_frames_cfi >= n - 1);

	/* The same window cut short anywhere: truncated after the frames it holds, never other frames;
	 * or, once it holds them all, the whole stack. */
	{
		uint64_t cut[UNWIND_TEST_DEPTH];
		unsigned deep_cuts = 0;

		for (size_t size = 64; size < captured.size; size += 64) {
			size_t m = symbolizer_unwind(s, getpid(), &(struct sym_unwind_input){
				.ip = captured.ip, .sp = captured.sp, .bp = captured.bp, .stack = captured.stack,
				.stack_size = size, .stack_complete = false,
			}, cut, UNWIND_TEST_DEPTH, &res);

			assert_true(m <= n);
			assert_memory_equal(cut, ips, m * sizeof(cut[0]));
			if (res.end == UNWIND_END_TRUNCATED)
				deep_cuts += m > 2 && m < n;
			else
				assert_int_equal(m, n);
		}
		assert_true(deep_cuts > 0);
	}
	/* A process that is gone (or unmapped everything): one frame, counted, no crash. */
	n = unwind_captured(s, 0x3fffffff, ips, &res);
	assert_int_equal(n, 0);
	assert_int_equal(res.end, UNWIND_END_NO_RULE);
	/* A pc in no mapping and garbage bp: the frame-pointer fallback stops at once. */
	n = symbolizer_unwind(s, getpid(), &(struct sym_unwind_input){
		.ip = 0x10, .sp = captured.sp, .bp = 3, .stack = captured.stack,
		.stack_size = captured.size, .stack_complete = captured.complete,
	}, ips, UNWIND_TEST_DEPTH, &res);
	assert_int_equal(n, 1);
	symbolizer_free(s);
}

/* ---- real signal frames and PLT stubs ---- */

static volatile sig_atomic_t signalled;

static void on_alarm(int sig)
{
	(void)sig;
	capture();
	signalled = 1;
}

int sig_leaf(void);
int sig_chain1(int x);
int sig_chain2(int x);
int sig_chain3(int x);

/* Spins until SIGALRM interrupts it (a bounded number of turns, so a lost signal fails the test). */
__attribute__((noinline)) int sig_leaf(void)
{
	for (unsigned long i = 0; i < 20000000000UL && !signalled; i++)
		__asm__ volatile("" ::: "memory");
	return signalled;
}
__attribute__((noinline)) int sig_chain3(int x)
{
	volatile int pad[3] = { x, x, x };
	int r = sig_leaf() + pad[1];

	__asm__ volatile("" ::: "memory");
	return r + 1;
}
CHAIN(sig_chain2, sig_chain3) CHAIN(sig_chain1, sig_chain2)

/* The address of glibc's signal return trampoline (__restore_rt), as sigaction() installed it. */
static uint64_t restorer(int sig)
{
	struct sigaction old;

	assert_int_equal(sigaction(sig, NULL, &old), 0);
	return (uint64_t)(uintptr_t)old.sa_restorer;
}

/*
 * SIGALRM interrupts sig_leaf in a known chain; the handler captures its stack like a sample would.
 * The unwind goes handler -> __restore_rt (a signal frame: the next pc is exact) -> the interrupted
 * sig_leaf -> sig_chain3 .. sig_chain1 -> this test -> main.
 */
static void test_signal_self_unwind(void **state)
{
	struct symbolizer *s = symbolizer_new(&(struct symbolizer_config){ .no_debuginfod = true });
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { .it_value = { .tv_usec = 20000 } };
	uint64_t ips[UNWIND_TEST_DEPTH], trampoline;
	struct unwind_result res;
	size_t n, i;
	bool main_seen = false;

	(void)state;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	trampoline = restorer(SIGALRM);
	assert_true(trampoline != 0);
	signalled = 0;
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	assert_true(sig_chain1(0) > 0);
	signal(SIGALRM, SIG_DFL);

	n = unwind_captured(s, getpid(), ips, &res);
	assert_int_equal(res.end, UNWIND_END_ENTRY);
	assert_string_equal(name_of(s, ips[0], true), "capture");
	assert_string_equal(name_of(s, ips[1], false), "on_alarm");
	/* The handler returns into the trampoline's first byte. */
	for (i = 2; i < n && ips[i] != trampoline; i++)
		;
	assert_true(i < n);
	assert_true(i + 5 < n);
	/* The interrupted pc is exact: it may be the first byte of its function. */
	assert_string_equal(name_of(s, ips[i + 1], true), "sig_leaf");
	assert_string_equal(name_of(s, ips[i + 2], false), "sig_chain3");
	assert_string_equal(name_of(s, ips[i + 3], false), "sig_chain2");
	assert_string_equal(name_of(s, ips[i + 4], false), "sig_chain1");
	assert_string_equal(name_of(s, ips[i + 5], false), "test_signal_self_unwind");
	for (i += 6; i < n; i++)
		main_seen |= !strcmp(name_of(s, ips[i], false), "main");
	assert_true(main_seen);
	symbolizer_free(s);
}

static struct elf_module *open_module_of(uint64_t address, uint64_t *vaddr)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long lo, hi, off;
	char line[1024], path[1024];
	struct elf_module *m = NULL;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %1023s", &lo, &hi, &off, path) == 4 && address >= lo &&
		    address < hi) {
			m = elf_module_open(open(path, O_RDONLY | O_CLOEXEC), &(struct elf_module_options){ .root_fd = -1, .path = path });
			assert_non_null(m);
			assert_true(elf_module_offset_to_vaddr(m, address - lo + off, vaddr));
			break;
		}
	fclose(f);
	assert_non_null(m);
	return m;
}

/* libc's real __restore_rt: its CFI says signal frame. */
static void test_restore_rt_rule(void **state)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct cfi_rule rule;
	struct elf_module *m;
	uint64_t vaddr;

	(void)state;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	m = open_module_of(restorer(SIGALRM), &vaddr);
	signal(SIGALRM, SIG_DFL);
	assert_int_equal(elf_module_cfi_rule(m, vaddr, &rule), 0);
	assert_true(rule.found);
	assert_true(rule.signal_frame);
	assert_int_equal(rule.cfa.kind, CFI_EXPR_VALUE);
	elf_module_free(m);
}

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uint64_t *)data = info->dlpi_addr;
	return 1;
}

/* The runtime address of this program's .plt section and its size. */
static uint64_t own_plt(uint64_t *size)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	uint64_t bias = 0, addr = 0;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)) && !strcmp(name, ".plt")) {
			addr = sh.sh_addr;
			*size = sh.sh_size;
		}
	}
	elf_end(elf);
	close(fd);
	assert_true(addr != 0);
	dl_iterate_phdr(first_object, &bias);
	return bias + addr;
}

/*
 * A real PLT stub of this program, as if capture() had just called through it: at the stub's first
 * byte the return address is on top of the stack; after its push (stub offset 11) one word more.
 * The stub's CFI (a DWARF expression on rip) finds it either way, and the walk goes on to main.
 */
static void test_plt_stub_unwind(void **state)
{
	static uint8_t window[sizeof(captured.stack) + 16];
	struct symbolizer *s = symbolizer_new(&(struct symbolizer_config){ .no_debuginfod = true });
	uint64_t plt_size = 0, plt = own_plt(&plt_size), stub = plt + 16, ips[UNWIND_TEST_DEPTH], vaddr;
	struct unwind_result res;
	struct elf_module *m;
	struct cfi_rule rule;
	size_t n, full;

	(void)state;
	assert_true(plt_size >= 32);
	m = open_module_of(stub, &vaddr);
	assert_int_equal(elf_module_cfi_rule(m, vaddr, &rule), 0);
	assert_true(rule.found);
	assert_false(rule.signal_frame);
	assert_int_equal(rule.cfa.kind, CFI_EXPR_VALUE);
	assert_true(rule.cfa.n > 2); /* the expression, not a plain register + offset */
	elf_module_free(m);

	chain1(1);
	full = unwind_captured(s, getpid(), ips, &res);
	assert_int_equal(res.end, UNWIND_END_ENTRY);
	for (unsigned pushed = 0; pushed <= 1; pushed++) {
		uint64_t sp = captured.sp - 8 * (1 + pushed), frames[UNWIND_TEST_DEPTH];

		memset(window, 0, 8 * pushed); /* the pushed relocation index */
		memcpy(window + 8 * pushed, &captured.ip, 8);
		memcpy(window + 8 * (1 + pushed), captured.stack, captured.size);
		n = symbolizer_unwind(s, getpid(), &(struct sym_unwind_input){
			.ip = stub + (pushed ? 11 : 0), .sp = sp, .bp = captured.bp, .stack = window,
			.stack_size = captured.size + 8 * (1 + pushed), .stack_complete = captured.complete,
		}, frames, UNWIND_TEST_DEPTH, &res);
		assert_int_equal(res.end, UNWIND_END_ENTRY);
		assert_int_equal(n, full + 1);
		assert_int_equal(frames[0], stub + (pushed ? 11 : 0));
		/* The stub's caller is capture() at the captured pc, then the same stack as before. */
		assert_int_equal(frames[1], captured.ip);
		assert_memory_equal(frames + 2, ips + 1, (full - 1) * sizeof(frames[0]));
	}
	symbolizer_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_to_entry),
		cmocka_unit_test(test_window_end),
		cmocka_unit_test(test_go_sp_frames_counted),
		cmocka_unit_test(test_looping_and_outside_cfi),
		cmocka_unit_test(test_plt_expression),
		cmocka_unit_test(test_signal_frame),
		cmocka_unit_test(test_frame_pointer_fallback),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_self_unwind),
		cmocka_unit_test(test_signal_self_unwind),
		cmocka_unit_test(test_restore_rt_rule),
		cmocka_unit_test(test_plt_stub_unwind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
