/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Go's own function table (.gopclntab), which the Go runtime reads for its tracebacks and which
 * stripped Go binaries (-ldflags='-s -w') keep: address -> function, file:line and the inlined
 * calls of the pcln inline tree. Formats of Go 1.16 and later: magic 0xfffffffa (Go 1.16-1.17),
 * 0xfffffff0 (Go 1.18-1.19), 0xfffffff1 (Go 1.20 and later); little endian only.
 *
 * The table is foreign input: every offset is checked against the bytes it points into, varints
 * are at most five bytes, counts are bounded by the section size, walks of the pc-value tables by
 * their bytes and inline chains by GOPCLNTAB_MAX_INLINE. Nothing is copied: strings returned point
 * into the caller's bytes (each checked to end inside them), which must outlive the table.
 */
#ifndef OTELPROF_GOPCLNTAB_H
#define OTELPROF_GOPCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most inlined calls followed at one pc (deeper chains are cut, the outermost function kept). */
#define GOPCLNTAB_MAX_INLINE 64
/* Most loaded segments kept to read funcdata (the inline trees) by virtual address. */
#define GOPCLNTAB_MAX_SEGMENTS 16

enum gopclntab_version {
	GOPCLNTAB_GO116, /* 0xfffffffa: Go 1.16 and 1.17 */
	GOPCLNTAB_GO118, /* 0xfffffff0: Go 1.18 and 1.19 */
	GOPCLNTAB_GO120, /* 0xfffffff1: Go 1.20 and later */
};

/* Bytes of the file as loaded at vaddr (a PT_LOAD segment's file contents). */
struct gopclntab_segment {
	uint64_t vaddr;
	const uint8_t *data;
	size_t size;
};

struct gopclntab_input {
	const uint8_t *table;        /* the .gopclntab section's bytes */
	size_t table_size;
	uint64_t table_vaddr;        /* its address (what runtime.firstmoduledata points to) */
	uint64_t text_vaddr, text_size; /* the .text section: the PCs' base when the header's textStart
					   is not inside it (unrelocated PIE); 0 when unknown */
	const uint8_t *noptrdata;    /* .noptrdata (Go 1.26+: .go.module), where the linker puts
					runtime.firstmoduledata, whose text is the base of entry offsets when
					the header has none (Go 1.26's external linking), and whose
					gofunc is the base of Go 1.18+ funcdata offsets; NULL: none */
	size_t noptrdata_size;
	const struct gopclntab_segment *segments; /* to read inline trees by address; copied */
	size_t nsegments;
};

/* One frame of a pc, innermost first; strings point into the input's bytes. */
struct gopclntab_frame {
	const char *function; /* never NULL in a filled frame */
	const char *file;     /* NULL when unknown */
	uint32_t line;        /* 0 when unknown */
};

struct gopclntab;

/* NULL with errno: ENOEXEC (not a pclntab of a format read here), EINVAL (malformed), ENOMEM. */
struct gopclntab *gopclntab_open(const struct gopclntab_input *in);
void gopclntab_free(struct gopclntab *t);

/* Largest SP delta taken from a pcsp table (Go's biggest frames are far smaller). */
#define GOPCLNTAB_MAX_FRAME (1 << 24)

enum gopclntab_frame_kind {
	GOPCLNTAB_FRAME_CALL = 0, /* an ordinary function: sp_delta steps to its caller */
	GOPCLNTAB_FRAME_TOP,      /* where Go's traceback ends (runtime.goexit, mstart, rt0_go) */
	GOPCLNTAB_FRAME_SWITCH,   /* a stack switch (flag SPWRITE: systemstack, mcall, morestack,
				     asmcgocall, gogo) or a signal trampoline (sigtramp): the caller's
				     frames are on another stack */
};

/* How to step from a pc of Go text to its caller, from the function's pcsp table and flags. */
struct gopclntab_frame_info {
	enum gopclntab_frame_kind kind;
	int32_t sp_delta; /* GOPCLNTAB_FRAME_CALL: bytes the function has pushed below its entry's sp
			     at pc (the return address not counted): the return address is at
			     sp + sp_delta, the caller's sp just above it */
	uint64_t entry;   /* the function's first pc */
};

/* The stepping of pc into *info; false when no function covers pc or its pcsp table is malformed. */
bool gopclntab_frame_info(const struct gopclntab *t, uint64_t pc, struct gopclntab_frame_info *info);
/* pc lies in the table's functions (the text it describes). */
bool gopclntab_covers(const struct gopclntab *t, uint64_t pc);
/*
 * The frames of pc, innermost (inlined callee) first, into out[0 .. max); 0 when no function
 * covers pc or its entry is malformed. *truncated: the chain was longer than max (the innermost
 * max - 1 and the outermost function are kept) or than GOPCLNTAB_MAX_INLINE.
 */
unsigned gopclntab_lookup(const struct gopclntab *t, uint64_t pc, struct gopclntab_frame *out, unsigned max,
			  bool *truncated);
/* The function of pc is where Go's traceback ends (runtime.goexit, runtime.mstart, runtime.rt0_go...). */
bool gopclntab_top_frame(const struct gopclntab *t, uint64_t pc);
enum gopclntab_version gopclntab_version(const struct gopclntab *t);
/* Inline trees can be read (Go 1.18+: runtime.firstmoduledata was found in .noptrdata). */
bool gopclntab_has_inline_trees(const struct gopclntab *t);
size_t gopclntab_nfuncs(const struct gopclntab *t);
/* Bytes this table allocated (the input's bytes are the caller's). */
size_t gopclntab_bytes(const struct gopclntab *t);

#endif
