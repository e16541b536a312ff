// SPDX-License-Identifier: Apache-2.0
#include "go_unwind.h"

#include <dwarf.h>
#include <string.h>

#define SP_REG (DW_OP_breg0 + CFI_REG_SP)

void go_unwind_stop_rule(struct cfi_rule *rule)
{
	memset(rule, 0, sizeof(*rule));
	rule->found = true;
	rule->cfa = (struct cfi_expr){ .kind = CFI_EXPR_VALUE, .first = 0, .n = 1 };
	rule->ra.kind = CFI_EXPR_UNDEFINED;
	rule->nops = 1;
	rule->ops[0] = (struct cfi_op){ .atom = SP_REG };
}

enum go_unwind_kind go_unwind_rule(const struct gopclntab *t, uint64_t pc, struct cfi_rule *rule)
{
	struct gopclntab_frame_info info;
	int64_t delta;

	if (!gopclntab_frame_info(t, pc, &info))
		return GO_UNWIND_NONE;
	if (info.kind != GOPCLNTAB_FRAME_CALL) {
		go_unwind_stop_rule(rule);
		return info.kind == GOPCLNTAB_FRAME_TOP ? GO_UNWIND_TOP : GO_UNWIND_SWITCH;
	}
	delta = info.sp_delta;
	memset(rule, 0, sizeof(*rule));
	rule->found = true;
	/* ops: [0] sp + delta + 8 (the CFA), [1] sp + delta (where the return address is),
	 * [2] sp + delta - 8 (where the caller's bp is, once saved). */
	rule->ops[0] = (struct cfi_op){ .atom = SP_REG, .n1 = delta + 8 };
	rule->ops[1] = (struct cfi_op){ .atom = SP_REG, .n1 = delta };
	rule->ops[2] = (struct cfi_op){ .atom = SP_REG, .n1 = delta - 8 };
	rule->nops = 3;
	rule->cfa = (struct cfi_expr){ .kind = CFI_EXPR_VALUE, .first = 0, .n = 1 };
	rule->ra = (struct cfi_expr){ .kind = CFI_EXPR_ADDRESS, .first = 1, .n = 1 };
	rule->sp.kind = CFI_EXPR_UNDEFINED; /* the caller's sp is the CFA */
	if (delta > 0)
		rule->bp = (struct cfi_expr){ .kind = CFI_EXPR_ADDRESS, .first = 2, .n = 1 };
	else
		rule->bp.kind = CFI_EXPR_SAME;
	return GO_UNWIND_STEP;
}
