// SPDX-License-Identifier: Apache-2.0
#include "unwind.h"

#include <dwarf.h>
#include <string.h>

/* User addresses on x86-64 are below this (47-bit address space; 57-bit with 5-level paging). */
#define USER_ADDRESS_LIMIT (1ULL << 56)

/* The registers known in the frame being unwound. */
struct machine {
	uint64_t ip, sp, bp;
	bool bp_known;
};

static const char *const end_names[UNWIND_END_MAX] = {
	[UNWIND_END_ENTRY] = "entry", [UNWIND_END_TRUNCATED] = "truncated", [UNWIND_END_DEPTH] = "depth",
	[UNWIND_END_NO_RULE] = "no_rule", [UNWIND_END_BAD_READ] = "bad_read",
	[UNWIND_END_NOT_GROWING] = "not_growing", [UNWIND_END_BAD_EXPR] = "bad_expr",
	[UNWIND_END_BAD_IP] = "bad_ip",
};

const char *unwind_end_name(enum unwind_end end)
{
	return end < UNWIND_END_MAX ? end_names[end] : "?";
}

/* Read size bytes (1-8) of the process at address from the window. 0 or the end reason. */
static int window_read(const struct unwind_window *w, uint64_t address, unsigned size, uint64_t *value)
{
	uint64_t v = 0;

	if (address < w->sp)
		return UNWIND_END_BAD_READ;
	if (address - w->sp > w->size || w->size - (address - w->sp) < size)
		return w->complete ? UNWIND_END_BAD_READ : UNWIND_END_TRUNCATED;
	/* A fixed size is one load, not a call into libc: most reads are of a whole word. */
	if (size == 8)
		memcpy(&v, w->data + (address - w->sp), 8);
	else
		memcpy(&v, w->data + (address - w->sp), size); /* little endian: the low bytes */
	*value = v;
	return 0;
}

static int reg_value(const struct machine *m, uint64_t regno, uint64_t *value)
{
	switch (regno) {
	case CFI_REG_RA:
		*value = m->ip;
		return 0;
	case CFI_REG_SP:
		*value = m->sp;
		return 0;
	case CFI_REG_BP:
		if (!m->bp_known)
			return UNWIND_END_BAD_EXPR;
		*value = m->bp;
		return 0;
	default: /* the sample saves only ip, sp and bp */
		return UNWIND_END_BAD_EXPR;
	}
}

static int binary_op(uint8_t atom, uint64_t a, uint64_t b, uint64_t *out)
{
	switch (atom) {
	case DW_OP_plus: *out = a + b; break;
	case DW_OP_minus: *out = a - b; break;
	case DW_OP_mul: *out = a * b; break;
	case DW_OP_and: *out = a & b; break;
	case DW_OP_or: *out = a | b; break;
	case DW_OP_xor: *out = a ^ b; break;
	case DW_OP_shl: *out = b < 64 ? a << b : 0; break;
	case DW_OP_shr: *out = b < 64 ? a >> b : 0; break;
	case DW_OP_shra: *out = (uint64_t)((int64_t)a >> (b < 63 ? b : 63)); break;
	case DW_OP_ge: *out = (int64_t)a >= (int64_t)b; break;
	case DW_OP_gt: *out = (int64_t)a > (int64_t)b; break;
	case DW_OP_le: *out = (int64_t)a <= (int64_t)b; break;
	case DW_OP_lt: *out = (int64_t)a < (int64_t)b; break;
	case DW_OP_eq: *out = a == b; break;
	case DW_OP_ne: *out = a != b; break;
	default: return UNWIND_END_BAD_EXPR;
	}
	return 0;
}

/*
 * Evaluate one expression of rule: a straight-line DWARF stack program (no branches), over the known
 * registers, the CFA (when have_cfa) and reads from the window. 0 with *out, or the end reason.
 */
static int eval(const struct cfi_rule *rule, const struct cfi_expr *e, const struct machine *m, const uint64_t *cfa,
		const struct unwind_window *w, uint64_t *out)
{
	uint64_t stack[UNWIND_EXPR_STACK], v;
	unsigned depth = 0;
	int r;

	if ((unsigned)e->first + e->n > rule->nops || rule->nops > CFI_MAX_OPS)
		return UNWIND_END_BAD_EXPR;
	for (unsigned i = e->first; i < (unsigned)e->first + e->n; i++) {
		const struct cfi_op *op = &rule->ops[i];
		uint8_t a = op->atom;

#define PUSH(x) do { if (depth == UNWIND_EXPR_STACK) return UNWIND_END_BAD_EXPR; stack[depth++] = (x); } while (0)
#define NEED(k) do { if (depth < (k)) return UNWIND_END_BAD_EXPR; } while (0)
		if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
			PUSH((uint64_t)(a - DW_OP_lit0));
		} else if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
			if ((r = reg_value(m, a - DW_OP_breg0, &v)))
				return r;
			PUSH(v + (uint64_t)op->n1);
		} else {
			switch (a) {
			case DW_OP_const1u: case DW_OP_const2u: case DW_OP_const4u: case DW_OP_const8u:
			case DW_OP_const1s: case DW_OP_const2s: case DW_OP_const4s: case DW_OP_const8s:
			case DW_OP_constu: case DW_OP_consts:
				PUSH((uint64_t)op->n1);
				break;
			case DW_OP_bregx:
				if ((r = reg_value(m, (uint64_t)op->n1, &v)))
					return r;
				PUSH(v + (uint64_t)(int64_t)op->n2);
				break;
			case DW_OP_call_frame_cfa:
				if (!cfa)
					return UNWIND_END_BAD_EXPR;
				PUSH(*cfa);
				break;
			case DW_OP_plus_uconst:
				NEED(1);
				stack[depth - 1] += (uint64_t)op->n1;
				break;
			case DW_OP_neg:
				NEED(1);
				stack[depth - 1] = -stack[depth - 1];
				break;
			case DW_OP_not:
				NEED(1);
				stack[depth - 1] = ~stack[depth - 1];
				break;
			case DW_OP_dup:
				NEED(1);
				v = stack[depth - 1];
				PUSH(v);
				break;
			case DW_OP_over:
				NEED(2);
				v = stack[depth - 2];
				PUSH(v);
				break;
			case DW_OP_drop:
				NEED(1);
				depth--;
				break;
			case DW_OP_swap:
				NEED(2);
				v = stack[depth - 1];
				stack[depth - 1] = stack[depth - 2];
				stack[depth - 2] = v;
				break;
			case DW_OP_deref:
			case DW_OP_deref_size:
				NEED(1);
				if (a == DW_OP_deref_size && (op->n1 < 1 || op->n1 > 8))
					return UNWIND_END_BAD_EXPR;
				if ((r = window_read(w, stack[depth - 1], a == DW_OP_deref ? 8 : (unsigned)op->n1, &v)))
					return r;
				stack[depth - 1] = v;
				break;
			case DW_OP_nop:
				break;
			default:
				NEED(2);
				if ((r = binary_op(a, stack[depth - 2], stack[depth - 1], &v)))
					return r;
				depth--;
				stack[depth - 1] = v;
				break;
			}
		}
#undef PUSH
#undef NEED
	}
	if (!depth)
		return UNWIND_END_BAD_EXPR;
	*out = stack[depth - 1];
	return 0;
}

/* The caller's value of a register by its rule: *known false when it is undefined. */
static int eval_register(const struct cfi_rule *rule, const struct cfi_expr *e, const struct machine *m,
			 uint64_t cfa, const struct unwind_window *w, uint64_t same, uint64_t *out, bool *known)
{
	uint64_t v;
	int r;

	*known = true;
	switch (e->kind) {
	case CFI_EXPR_UNDEFINED:
		*known = false;
		return 0;
	case CFI_EXPR_SAME:
		*out = same;
		return 0;
	case CFI_EXPR_VALUE:
		return eval(rule, e, m, &cfa, w, out);
	case CFI_EXPR_ADDRESS:
		if ((r = eval(rule, e, m, &cfa, w, &v)))
			return r;
		/* Saved below the current sp: an epilogue already popped it back into the register
		 * (compilers do not always restate the rule after the pop). */
		if (v < m->sp && e != &rule->ra) {
			*out = same;
			return 0;
		}
		return window_read(w, v, 8, out);
	default:
		return UNWIND_END_BAD_EXPR;
	}
}

/* One frame by CFI: the caller's ip, sp and bp. 0, or the end reason. */
static int step_cfi(const struct cfi_rule *rule, const struct machine *m, const struct unwind_window *w,
		    struct machine *caller)
{
	uint64_t cfa;
	bool known;
	int r;

	if (rule->cfa.kind != CFI_EXPR_VALUE)
		return UNWIND_END_NO_RULE;
	if ((r = eval(rule, &rule->cfa, m, NULL, w, &cfa)))
		return r;
	if ((r = eval_register(rule, &rule->ra, m, cfa, w, m->ip, &caller->ip, &known)))
		return r;
	if (rule->ra.kind == CFI_EXPR_SAME)
		return UNWIND_END_BAD_EXPR;
	if (!known) {
		caller->ip = 0; /* the outermost frame: the walker ends at ip 0 */
		caller->sp = cfa; /* and its extent: nothing above is read */
		return 0;
	}
	if ((r = eval_register(rule, &rule->sp, m, cfa, w, m->sp, &caller->sp, &known)))
		return r;
	if (!known || rule->sp.kind == CFI_EXPR_SAME)
		caller->sp = cfa; /* the x86-64 ABI: the caller's sp is the CFA */
	if ((r = eval_register(rule, &rule->bp, m, cfa, w, m->bp, &caller->bp, &caller->bp_known)))
		return r;
	if (rule->bp.kind == CFI_EXPR_SAME)
		caller->bp_known = m->bp_known;
	return 0;
}

/* One frame by the frame-pointer convention: [bp] is the caller's bp, [bp + 8] the return address. */
static int step_fp(const struct machine *m, const struct unwind_window *w, struct machine *caller)
{
	int r;

	if (!m->bp_known || m->bp < m->sp || (m->bp & 7))
		return UNWIND_END_NO_RULE;
	if ((r = window_read(w, m->bp + 8, 8, &caller->ip)) || (r = window_read(w, m->bp, 8, &caller->bp)))
		return r;
	caller->sp = m->bp + 16;
	caller->bp_known = true;
	return 0;
}

size_t unwind_stack(const struct unwind_regs *regs, const struct unwind_window *window, unwind_rule_fn find_rule,
		    void *ctx, uint64_t *ips, size_t max, struct unwind_result *result)
{
	struct machine m = { .ip = regs->ip, .sp = regs->sp, .bp = regs->bp, .bp_known = true };
	uint64_t lookup = regs->ip; /* the leaf's ip is the instruction itself */
	const struct cfi_rule *rule;

	memset(result, 0, sizeof(*result));
	if (!max)
		return 0;
	if (!m.ip || m.ip >= USER_ADDRESS_LIMIT) {
		result->end = UNWIND_END_BAD_IP;
		return 0;
	}
	ips[result->n++] = m.ip;
	for (;;) {
		struct machine caller = { 0 };
		int r;

		if (result->n == max) {
			result->end = UNWIND_END_DEPTH;
			break;
		}
		rule = find_rule(ctx, lookup);
		if (rule && !rule->found)
			rule = NULL;
		if (rule) {
			r = step_cfi(rule, &m, window, &caller);
		} else {
			/* bp == 0 ends a frame-pointer chain: _start clears it. */
			if (m.bp_known && m.bp == 0) {
				result->end = UNWIND_END_ENTRY;
				break;
			}
			r = step_fp(&m, window, &caller);
		}
		if (r) {
			result->end = (enum unwind_end)r;
			break;
		}
		if (!caller.ip) {
			result->end = UNWIND_END_ENTRY;
			/* Only CFI marks the outermost frame for sure: a zero bp or return address read
			 * from a frame without CFI may be a value in the middle of the stack. */
			if (rule)
				result->top = caller.sp > m.sp ? caller.sp : m.sp;
			break;
		}
		if (caller.ip >= USER_ADDRESS_LIMIT) {
			result->end = UNWIND_END_BAD_IP;
			break;
		}
		if (caller.sp <= m.sp) {
			result->end = UNWIND_END_NOT_GROWING;
			break;
		}
		ips[result->n++] = caller.ip;
		if (rule && rule->go_sp_delta)
			result->go_sp_frames++;
		else if (rule)
			result->cfi_frames++;
		else
			result->fp_frames++;
		/* A return address follows its call: look the caller up at the call. The interrupted state
		 * under a signal trampoline is an exact pc. */
		lookup = rule && rule->signal_frame ? caller.ip : caller.ip - 1;
		m = caller;
	}
	return result->n;
}
