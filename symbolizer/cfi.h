/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unwinding rules of one code address, compiled from DWARF CFI (.eh_frame or .debug_frame through
 * libdw's dwarf_cfi_addrframe) into a small self-contained value that can be cached and evaluated
 * without libdw: the canonical frame address (CFA) and how to recover the caller's return address,
 * frame pointer and stack pointer, each as a short DWARF expression. x86-64 register numbers.
 */
#ifndef OTELPROF_CFI_H
#define OTELPROF_CFI_H

#include <stdbool.h>
#include <stdint.h>

/* DWARF register numbers of x86-64 that the unwinder tracks. */
#define CFI_REG_BP 6
#define CFI_REG_SP 7
#define CFI_REG_RA 16 /* the return address column (rip) */

/* Most DWARF operations kept for all the expressions of one rule (a PLT stub's CFA takes 9, and
 * its return address and stack pointer 4 more). */
#define CFI_MAX_OPS 16

enum cfi_expr_kind {
	CFI_EXPR_UNDEFINED = 0, /* cannot be recovered (for the return address: the outermost frame) */
	CFI_EXPR_SAME,          /* unchanged in the caller */
	CFI_EXPR_ADDRESS,       /* the value is saved in memory at the address the expression computes */
	CFI_EXPR_VALUE,         /* the expression computes the value itself */
};

struct cfi_op {
	int64_t n1;    /* first operand (Dwarf_Op.number) */
	int32_t n2;    /* second operand (DW_OP_bregx's offset); operands that do not fit refuse the rule */
	uint8_t atom;  /* DW_OP_* */
};

struct cfi_expr {
	uint8_t kind;  /* enum cfi_expr_kind */
	uint8_t first; /* ops[first .. first + n) of the rule */
	uint8_t n;
};

struct cfi_rule {
	bool found;         /* false: no CFI covers the address (callers fall back to frame pointers) */
	bool signal_frame;  /* a signal trampoline: its caller's pc is exact, not a return address */
	bool go_sp_delta;   /* not CFI: Go's SP-delta table (Go text without CFI), counted apart */
	struct cfi_expr cfa;           /* CFI_EXPR_VALUE, or UNDEFINED when the CFA is unknown */
	struct cfi_expr ra, bp, sp;    /* the caller's return address, rbp and rsp */
	uint8_t nops;
	struct cfi_op ops[CFI_MAX_OPS];
};

struct Dwarf_CFI_s;

/*
 * Compile the rules of address (in the CFI's own address space) from cfi into *rule.
 * 0 (rule->found tells whether CFI covers the address), -ENOTSUP for rules this compiler does not
 * take (too many or too large operations, a return address column other than 16), -EINVAL for CFI
 * libdw could not parse.
 */
int cfi_compile(struct Dwarf_CFI_s *cfi, uint64_t address, struct cfi_rule *rule);

#endif
