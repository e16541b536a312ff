// SPDX-License-Identifier: Apache-2.0
#include "cfi.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Append ops to rule->ops as expression e. -ENOTSUP when they do not fit. */
static int add_ops(struct cfi_rule *rule, struct cfi_expr *e, enum cfi_expr_kind kind, const Dwarf_Op *ops, size_t n)
{
	if (n > (size_t)(CFI_MAX_OPS - rule->nops))
		return -ENOTSUP;
	e->kind = kind;
	e->first = rule->nops;
	e->n = (uint8_t)n;
	for (size_t i = 0; i < n; i++) {
		if ((int64_t)ops[i].number2 != (int32_t)ops[i].number2)
			return -ENOTSUP;
		rule->ops[rule->nops++] = (struct cfi_op){
			.atom = ops[i].atom, .n1 = (int64_t)ops[i].number, .n2 = (int32_t)ops[i].number2,
		};
	}
	return 0;
}

/*
 * A register's rule as libdw states it: no ops and a NULL pointer is "same value", no ops otherwise
 * "undefined"; a final DW_OP_stack_value makes the expression the value rather than its address.
 */
static int compile_register(Dwarf_Frame *frame, int regno, struct cfi_rule *rule, struct cfi_expr *e)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t n = 0;

	if (dwarf_frame_register(frame, regno, mem, &ops, &n))
		return -EINVAL;
	if (n == 0) {
		e->kind = ops ? CFI_EXPR_UNDEFINED : CFI_EXPR_SAME;
		return 0;
	}
	if (ops[n - 1].atom == DW_OP_stack_value)
		return add_ops(rule, e, CFI_EXPR_VALUE, ops, n - 1);
	return add_ops(rule, e, CFI_EXPR_ADDRESS, ops, n);
}

int cfi_compile(Dwarf_CFI *cfi, uint64_t address, struct cfi_rule *rule)
{
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr start, end;
	Dwarf_Op *ops;
	size_t n;
	int r;

	memset(rule, 0, offsetof(struct cfi_rule, ops));
	if (!cfi || dwarf_cfi_addrframe(cfi, address, &frame))
		return 0; /* no FDE covers the address (or libdw could not read it): not found */
	r = -ENOTSUP;
	if (dwarf_frame_info(frame, &start, &end, &rule->signal_frame) != CFI_REG_RA)
		goto out;
	r = -EINVAL;
	if (dwarf_frame_cfa(frame, &ops, &n))
		goto out;
	if (n && (r = add_ops(rule, &rule->cfa, CFI_EXPR_VALUE, ops, n)))
		goto out;
	if ((r = compile_register(frame, CFI_REG_RA, rule, &rule->ra)) ||
	    (r = compile_register(frame, CFI_REG_BP, rule, &rule->bp)) ||
	    (r = compile_register(frame, CFI_REG_SP, rule, &rule->sp)))
		goto out;
	rule->found = true;
out:
	free(frame);
	if (r)
		memset(rule, 0, offsetof(struct cfi_rule, ops));
	return r;
}
