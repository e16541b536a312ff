// SPDX-License-Identifier: Apache-2.0
/*
 * Reading Go's .gopclntab: the header, the function table (binary search by pc), each function's
 * _func record, the pc-value tables (file, line, inline index) and the inline trees, in the
 * layouts of Go 1.16-1.17, 1.18-1.19 and 1.20+. Every read is bounded by the bytes it reads from.
 */
#include "gopclntab.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC_GO116 0xfffffffaU
#define MAGIC_GO118 0xfffffff0U
#define MAGIC_GO120 0xfffffff1U
/* PCDATA and FUNCDATA slots of the inline tree (cmd/internal/objabi): the same in every version read. */
#define PCDATA_INL_TREE_INDEX 2
#define FUNCDATA_INL_TREE 3
/* _func.flag bit (Go 1.17+): the traceback stops at this function, a complete stack. */
#define FUNC_FLAG_TOP_FRAME 1
/* _func.flag bit (Go 1.17+): the function writes SP (a stack switch: systemstack, mcall, morestack,
 * asmcgocall, gogo): its SP delta says nothing about where its caller's frame is. */
#define FUNC_FLAG_SPWRITE 2
/* A pc-value varint encodes a uint32: five bytes at most. */
#define VARINT_MAX_BYTES 5
/* Inline tree indices accepted (a function's tree has far fewer entries). */
#define MAX_INLINE_INDEX (1 << 20)
/* Words of runtime.moduledata up to gofunc: Go 1.20 added covctrs and ecovctrs before it. */
#define MODULEDATA_GOFUNC_GO118 38
#define MODULEDATA_GOFUNC_GO120 40
/* Word of runtime.moduledata holding text (Go 1.18+): the base of entry offsets, which Go 1.26's
 * external linker leaves as 0 in the table's header. */
#define MODULEDATA_TEXT 22

struct gopclntab {
	enum gopclntab_version version;
	const uint8_t *table;
	size_t size;
	uint64_t vaddr;
	unsigned ptrsize, quantum;
	uint64_t nfunc;
	uint64_t text_start;     /* base of Go 1.18+ entry offsets */
	size_t funcnametab, cutab, filetab, pctab, pclntab; /* sub-tables: offsets into table */
	size_t field;            /* bytes of a function table field: 4 (Go 1.18+) or ptrsize */
	uint64_t min_pc, max_pc; /* the first function's entry, the end of the last one */
	size_t func_fixed;       /* bytes of a _func before its pcdata */
	size_t off_name;         /* _func.nameoff; pcfile, pcln, npcdata, cuOffset follow at fixed steps */
	size_t off_flag, off_nfuncdata;
	uint64_t gofunc;         /* base of Go 1.18+ funcdata offsets */
	bool has_gofunc;
	struct gopclntab_segment segments[GOPCLNTAB_MAX_SEGMENTS];
	size_t nsegments;
};

/* One function's record, checked to lie inside the table. */
struct go_func {
	uint64_t entry, end;
	size_t at;               /* offset of its _func in table */
	uint32_t nameoff, pcsp, pcfile, pcln, npcdata, cu;
	uint8_t flag, nfuncdata;
};

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t rdptr(const uint8_t *p, unsigned size)
{
	uint64_t v;

	if (size == 4)
		return rd32(p);
	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static bool fits(size_t size, size_t off, size_t len)
{
	return off <= size && len <= size - off;
}

/* A NUL-terminated string at base + off of the table, or NULL when it runs past the end. */
static const char *string_at(const struct gopclntab *t, size_t base, uint64_t off)
{
	const uint8_t *s;

	if (base > t->size || off >= t->size - base)
		return NULL;
	s = t->table + base + off;
	return memchr(s, 0, t->size - base - off) ? (const char *)s : NULL;
}

/* size bytes of the loaded file at vaddr, or NULL. */
static const uint8_t *segment_at(const struct gopclntab *t, uint64_t vaddr, size_t size)
{
	for (size_t i = 0; i < t->nsegments; i++) {
		const struct gopclntab_segment *s = &t->segments[i];

		if (vaddr >= s->vaddr && fits(s->size, vaddr - s->vaddr, size))
			return s->data + (vaddr - s->vaddr);
	}
	return NULL;
}

/* Function table field k (entry i is fields 2i and 2i + 1; field 2n is the end of the last). */
static uint64_t functab_field(const struct gopclntab *t, uint64_t k)
{
	return rdptr(t->table + t->pclntab + k * t->field, (unsigned)t->field);
}

static uint64_t functab_pc(const struct gopclntab *t, uint64_t i)
{
	uint64_t v = functab_field(t, 2 * i);

	return t->version == GOPCLNTAB_GO116 ? v : t->text_start + v;
}

static bool read_varint(const uint8_t **p, const uint8_t *end, uint32_t *out)
{
	uint32_t v = 0;

	for (unsigned i = 0; i < VARINT_MAX_BYTES; i++) {
		uint8_t b;

		if (*p >= end)
			return false;
		b = *(*p)++;
		v |= (uint32_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*out = v;
			return true;
		}
	}
	return false;
}

/*
 * The value of a pc-value table (at off in pctab) at target, for the function [entry, end): as the
 * runtime's pcvalue() reads it. false when the table ends first or is malformed.
 */
static bool pcvalue(const struct gopclntab *t, uint32_t off, const struct go_func *f, uint64_t target, int32_t *out)
{
	const uint8_t *p, *end = t->table + t->size;
	uint32_t val = UINT32_MAX; /* -1 */
	uint64_t pc = f->entry;
	bool first = true;

	if (!off || t->pctab >= t->size || off >= t->size - t->pctab)
		return false;
	p = t->table + t->pctab + off;
	/* Each step reads at least two bytes: the table's size bounds the walk. */
	for (;;) {
		uint32_t uv, pcdelta;

		if (!read_varint(&p, end, &uv) || (uv == 0 && !first))
			return false;
		first = false;
		if (!read_varint(&p, end, &pcdelta))
			return false;
		val += (uv & 1) ? ~(uv >> 1) : uv >> 1;
		pc += (uint64_t)pcdelta * t->quantum;
		if (target < pc) {
			*out = (int32_t)val;
			return true;
		}
		if (pc >= f->end)
			return false;
	}
}

/* The function covering pc, its record checked against the table. */
static bool find_func(const struct gopclntab *t, uint64_t pc, struct go_func *f)
{
	uint64_t lo = 0, hi = t->nfunc, funcoff;
	const uint8_t *r;

	if (pc < t->min_pc || pc >= t->max_pc)
		return false;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (functab_pc(t, mid) <= pc)
			lo = mid;
		else
			hi = mid;
	}
	f->entry = functab_pc(t, lo);
	f->end = functab_pc(t, lo + 1);
	funcoff = functab_field(t, 2 * lo + 1);
	if (pc < f->entry || pc >= f->end || funcoff > t->size - t->pclntab ||
	    !fits(t->size, t->pclntab + funcoff, t->func_fixed))
		return false;
	f->at = t->pclntab + funcoff;
	r = t->table + f->at;
	/* The record names its own entry: a table whose index and records disagree is not read. */
	if (t->version == GOPCLNTAB_GO116 ? rdptr(r, t->ptrsize) != f->entry
					   : rd32(r) != functab_field(t, 2 * lo))
		return false;
	f->nameoff = rd32(r + t->off_name);
	f->pcsp = rd32(r + t->off_name + 12);
	f->pcfile = rd32(r + t->off_name + 16);
	f->pcln = rd32(r + t->off_name + 20);
	f->npcdata = rd32(r + t->off_name + 24);
	f->cu = rd32(r + t->off_name + 28);
	f->flag = r[t->off_flag];
	f->nfuncdata = r[t->off_nfuncdata];
	return f->npcdata <= (t->size - f->at - t->func_fixed) / 4;
}

static bool func_pcdata(const struct gopclntab *t, const struct go_func *f, uint32_t k, uint32_t *out)
{
	if (k >= f->npcdata)
		return false;
	*out = rd32(t->table + f->at + t->func_fixed + 4 * (size_t)k); /* inside: npcdata was checked */
	return true;
}

/* The address of function f's inline tree, or false when it has none (or it cannot be found). */
static bool func_inline_tree(const struct gopclntab *t, const struct go_func *f, uint64_t *tree)
{
	size_t at = f->at + t->func_fixed + 4 * (size_t)f->npcdata;

	if (FUNCDATA_INL_TREE >= f->nfuncdata)
		return false;
	if (t->version == GOPCLNTAB_GO116) {
		/* Pointers, aligned to their size in memory. */
		if (t->ptrsize == 8 && ((t->vaddr + at) & 4))
			at += 4;
		at += (size_t)FUNCDATA_INL_TREE * t->ptrsize;
		if (!fits(t->size, at, t->ptrsize))
			return false;
		*tree = rdptr(t->table + at, t->ptrsize);
		return *tree != 0;
	}
	at += 4 * FUNCDATA_INL_TREE;
	if (!t->has_gofunc || !fits(t->size, at, 4) || rd32(t->table + at) == UINT32_MAX)
		return false;
	*tree = t->gofunc + rd32(t->table + at);
	return true;
}

/* Entry ix of an inline tree: the inlined function's name offset and its call site's pc offset. */
static bool inline_entry(const struct gopclntab *t, uint64_t tree, int32_t ix, uint32_t *nameoff, int32_t *parent_pc)
{
	size_t esize = t->version == GOPCLNTAB_GO120 ? 16 : 20;
	const uint8_t *e;

	if (ix < 0 || ix >= MAX_INLINE_INDEX || !(e = segment_at(t, tree + (uint64_t)ix * esize, esize)))
		return false;
	/* Go 1.20+: funcID, pad, nameOff, parentPc, startLine; before: parent, funcID, pad, file, line,
	 * func_, parentPc. */
	*nameoff = rd32(e + (esize == 16 ? 4 : 12));
	*parent_pc = (int32_t)rd32(e + (esize == 16 ? 8 : 16));
	return true;
}

/* File and line of pc from f's tables: the innermost position, inlined bodies included. */
static void fill_position(const struct gopclntab *t, const struct go_func *f, uint64_t pc, struct gopclntab_frame *out)
{
	int32_t v;

	out->file = NULL;
	out->line = 0;
	if (pcvalue(t, f->pcfile, f, pc, &v) && v >= 0) {
		uint64_t at = (uint64_t)t->cutab + 4 * ((uint64_t)f->cu + (uint32_t)v);

		if (at <= t->size && t->size - at >= 4 && rd32(t->table + at) != UINT32_MAX)
			out->file = string_at(t, t->filetab, rd32(t->table + at));
	}
	if (pcvalue(t, f->pcln, f, pc, &v) && v > 0)
		out->line = (uint32_t)v;
}

unsigned gopclntab_lookup(const struct gopclntab *t, uint64_t pc, struct gopclntab_frame *out, unsigned max,
			  bool *truncated)
{
	struct gopclntab_frame chain[GOPCLNTAB_MAX_INLINE + 1];
	struct go_func f;
	uint64_t cur = pc, tree;
	uint32_t inl;
	unsigned n = 0;

	*truncated = false;
	if (!max || !find_func(t, pc, &f))
		return 0;
	/* As the runtime's traceback: the inline index at pc names the innermost inlined call; its
	 * parentPc is an instruction of the caller at the call site, where the index names the next. */
	if (func_pcdata(t, &f, PCDATA_INL_TREE_INDEX, &inl) && inl && func_inline_tree(t, &f, &tree)) {
		int32_t ix, parent_pc;
		uint32_t nameoff;

		while (pcvalue(t, inl, &f, cur, &ix) && ix >= 0) {
			if (n == GOPCLNTAB_MAX_INLINE) {
				*truncated = true;
				break;
			}
			if (!inline_entry(t, tree, ix, &nameoff, &parent_pc) ||
			    !(chain[n].function = string_at(t, t->funcnametab, nameoff)))
				break;
			fill_position(t, &f, cur, &chain[n++]);
			if (parent_pc < 0 || (uint64_t)parent_pc >= f.end - f.entry)
				break;
			cur = f.entry + (uint64_t)parent_pc;
		}
	}
	if (!(chain[n].function = string_at(t, t->funcnametab, f.nameoff)))
		return 0;
	fill_position(t, &f, cur, &chain[n++]);
	if (n > max) {
		*truncated = true;
		memcpy(out, chain, (max - 1) * sizeof(*out));
		out[max - 1] = chain[n - 1];
		return max;
	}
	memcpy(out, chain, n * sizeof(*out));
	return n;
}

static bool func_is_top(const struct gopclntab *t, const struct go_func *f)
{
	static const char *const tops[] = { "runtime.goexit", "runtime.mstart", "runtime.rt0_go" };
	const char *name;

	if (f->flag & FUNC_FLAG_TOP_FRAME)
		return true;
	/* Go 1.16 has no flag (the byte is padding, 0): the functions Go 1.17 marks. */
	if (t->version != GOPCLNTAB_GO116 || !(name = string_at(t, t->funcnametab, f->nameoff)))
		return false;
	for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++)
		if (!strcmp(name, tops[i]))
			return true;
	return false;
}

bool gopclntab_top_frame(const struct gopclntab *t, uint64_t pc)
{
	struct go_func f;

	return find_func(t, pc, &f) && func_is_top(t, &f);
}

/* Functions whose frames the SP delta cannot step over, by name: the stack switches of Go 1.16 (no
 * flags yet) and the signal trampolines, which run on the signal stack and return to the kernel,
 * the interrupted context being in a ucontext on that stack and its frames on another. */
static bool switches_stack(const struct gopclntab *t, const struct go_func *f)
{
	static const char *const names[] = {
		"runtime.sigtramp", "runtime.cgoSigtramp", "runtime.sigreturn", "runtime.sigreturn__sigaction",
		"runtime.morestack", "runtime.systemstack", "runtime.mcall", "runtime.asmcgocall", "runtime.gogo",
	};
	const char *name = string_at(t, t->funcnametab, f->nameoff);

	if (!name)
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

bool gopclntab_frame_info(const struct gopclntab *t, uint64_t pc, struct gopclntab_frame_info *info)
{
	struct go_func f;

	memset(info, 0, sizeof(*info));
	if (!find_func(t, pc, &f))
		return false;
	info->entry = f.entry;
	if (func_is_top(t, &f)) {
		info->kind = GOPCLNTAB_FRAME_TOP;
	} else if ((t->version != GOPCLNTAB_GO116 && (f.flag & FUNC_FLAG_SPWRITE)) || switches_stack(t, &f)) {
		info->kind = GOPCLNTAB_FRAME_SWITCH;
	} else {
		info->kind = GOPCLNTAB_FRAME_CALL;
		/* A negative delta or one past the table's own bound is garbage: no rule. */
		if (!pcvalue(t, f.pcsp, &f, pc, &info->sp_delta) || info->sp_delta < 0 ||
		    info->sp_delta > GOPCLNTAB_MAX_FRAME)
			return false;
	}
	return true;
}

bool gopclntab_covers(const struct gopclntab *t, uint64_t pc)
{
	return pc >= t->min_pc && pc < t->max_pc;
}

/*
 * runtime.firstmoduledata in .noptrdata: the record that points to the table and its sub-tables
 * (checked word by word), whose gofunc is the base of Go 1.18+ funcdata offsets and whose text is
 * the base of entry offsets when the header has none. Not found in an unrelocated PIE (its
 * pointers are zero in the file): then no inline trees.
 */
static void find_moduledata(struct gopclntab *t, const struct gopclntab_input *in, uint64_t *text)
{
	size_t w = t->ptrsize, gofunc = t->version == GOPCLNTAB_GO118 ? MODULEDATA_GOFUNC_GO118
								    : MODULEDATA_GOFUNC_GO120;

	if (!in->noptrdata || in->noptrdata_size < (gofunc + 1) * w)
		return;
	for (size_t off = 0; off <= in->noptrdata_size - (gofunc + 1) * w; off += w) {
		const uint8_t *md = in->noptrdata + off;

		if (rdptr(md, t->ptrsize) != t->vaddr || rdptr(md + w, t->ptrsize) != t->vaddr + t->funcnametab ||
		    rdptr(md + 4 * w, t->ptrsize) != t->vaddr + t->cutab ||
		    rdptr(md + 7 * w, t->ptrsize) != t->vaddr + t->filetab ||
		    rdptr(md + 10 * w, t->ptrsize) != t->vaddr + t->pctab)
			continue;
		t->gofunc = rdptr(md + gofunc * w, t->ptrsize);
		t->has_gofunc = segment_at(t, t->gofunc, 1) != NULL;
		*text = rdptr(md + MODULEDATA_TEXT * w, t->ptrsize);
		return;
	}
}

/* addr lies in the .text section (any nonzero address when its bounds are unknown). */
static bool in_text(const struct gopclntab_input *in, uint64_t addr)
{
	if (!in->text_size)
		return addr != 0;
	return addr >= in->text_vaddr && addr - in->text_vaddr < in->text_size;
}

/* The header: version, sizes and the sub-tables' offsets, each inside the table. */
static int read_header(struct gopclntab *t, const struct gopclntab_input *in)
{
	const uint8_t *b = in->table;
	uint64_t word[8];
	unsigned nwords;

	if (!b || in->table_size < 8)
		return -ENOEXEC;
	switch (rd32(b)) {
	case MAGIC_GO116: t->version = GOPCLNTAB_GO116; break;
	case MAGIC_GO118: t->version = GOPCLNTAB_GO118; break;
	case MAGIC_GO120: t->version = GOPCLNTAB_GO120; break;
	default: return -ENOEXEC; /* older formats, or big endian */
	}
	if (b[4] || b[5] || (b[6] != 1 && b[6] != 2 && b[6] != 4) || (b[7] != 4 && b[7] != 8))
		return -ENOEXEC;
	t->table = b;
	t->size = in->table_size;
	t->vaddr = in->table_vaddr;
	t->quantum = b[6];
	t->ptrsize = b[7];
	nwords = t->version == GOPCLNTAB_GO116 ? 7 : 8;
	if (t->size < 8 + (size_t)nwords * t->ptrsize)
		return -EINVAL;
	for (unsigned i = 0; i < nwords; i++) {
		bool text_start = i == 2 && t->version != GOPCLNTAB_GO116; /* an address */

		word[i] = rdptr(b + 8 + i * t->ptrsize, t->ptrsize);
		if (i >= 2 && !text_start && (word[i] < 8 + (uint64_t)nwords * t->ptrsize || word[i] >= t->size))
			return -EINVAL;
	}
	t->nfunc = word[0];
	if (t->version == GOPCLNTAB_GO116) {
		t->funcnametab = word[2], t->cutab = word[3], t->filetab = word[4], t->pctab = word[5];
		t->pclntab = word[6];
		t->field = t->ptrsize;
		t->func_fixed = t->ptrsize + 36;
		t->off_name = t->ptrsize;
	} else {
		t->funcnametab = word[3], t->cutab = word[4], t->filetab = word[5], t->pctab = word[6];
		t->pclntab = word[7];
		t->field = 4;
		t->func_fixed = t->version == GOPCLNTAB_GO118 ? 40 : 44; /* Go 1.20 added startLine */
		t->off_name = 4;
	}
	t->off_flag = t->off_name + (t->version == GOPCLNTAB_GO120 ? 37 : 33);
	t->off_nfuncdata = t->off_flag + 2;
	return 0;
}

struct gopclntab *gopclntab_open(const struct gopclntab_input *in)
{
	struct gopclntab *t = calloc(1, sizeof(*t));
	uint64_t prev = 0;
	int r = -ENOMEM;

	if (!t)
		goto fail;
	r = read_header(t, in);
	if (r)
		goto fail;
	r = -EINVAL;
	t->nsegments = in->nsegments < GOPCLNTAB_MAX_SEGMENTS ? in->nsegments : GOPCLNTAB_MAX_SEGMENTS;
	if (t->nsegments)
		memcpy(t->segments, in->segments, t->nsegments * sizeof(*t->segments));
	if (t->version != GOPCLNTAB_GO116) {
		uint64_t text = 0;

		find_moduledata(t, in, &text);
		t->text_start = rdptr(in->table + 8 + 2 * t->ptrsize, t->ptrsize);
		/* 0 there: Go 1.26's external linker (cgo) leaves it to runtime.firstmoduledata.text; an
		 * unrelocated PIE has neither, and the .text section is the base, as debug/gosym takes it. */
		if (!in_text(in, t->text_start))
			t->text_start = in_text(in, text) ? text : in->text_vaddr;
	}
	if (!t->nfunc || t->nfunc > (t->size - t->pclntab) / t->field / 2 ||
	    (2 * t->nfunc + 1) * t->field > t->size - t->pclntab)
		goto fail;
	/* Sorted entries whose records lie in the table: the binary search relies on it. */
	for (uint64_t i = 0; i <= t->nfunc; i++) {
		uint64_t pc = functab_pc(t, i);

		if ((i && pc < prev) || (i < t->nfunc && functab_field(t, 2 * i + 1) >= t->size - t->pclntab))
			goto fail;
		prev = pc;
	}
	t->min_pc = functab_pc(t, 0);
	t->max_pc = prev;
	if (t->min_pc >= t->max_pc)
		goto fail;
	return t;

fail:
	free(t);
	errno = -r;
	return NULL;
}

void gopclntab_free(struct gopclntab *t)
{
	free(t);
}

enum gopclntab_version gopclntab_version(const struct gopclntab *t)
{
	return t->version;
}

bool gopclntab_has_inline_trees(const struct gopclntab *t)
{
	return t->version == GOPCLNTAB_GO116 ? t->nsegments > 0 : t->has_gofunc;
}

size_t gopclntab_nfuncs(const struct gopclntab *t)
{
	return (size_t)t->nfunc;
}

size_t gopclntab_bytes(const struct gopclntab *t)
{
	return sizeof(*t);
}
