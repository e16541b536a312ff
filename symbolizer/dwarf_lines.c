// SPDX-License-Identifier: Apache-2.0
#include "dwarf_lines.h"

#include <dwarf.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

/* A byte range of a section with its own bounds; any read past end sets bad. */
struct cursor {
	const uint8_t *p, *end;
	bool bad;
};

struct section {
	const uint8_t *data;
	size_t size;
};

struct line_file {
	const char *name; /* NUL-terminated inside its section */
	uint64_t dir;     /* index in dirs (DWARF 5), or 0 = comp_dir / k = dirs[k - 1] (2-4) */
};

struct dwarf_lines {
	unsigned version;
	uint8_t min_inst_len;
	bool default_is_stmt;
	int8_t line_base;
	uint8_t line_range;
	uint8_t opcode_base;
	uint8_t std_lengths[256];   /* operands (ULEBs) of each standard opcode */
	const uint8_t *program, *end; /* the opcodes, inside the mapped section */
	const char *comp_dir;       /* DW_AT_comp_dir (libdw's string), or NULL */
	const char **dirs;
	size_t ndirs;
	struct line_file *files;
	size_t nfiles;
	uint64_t first_file;        /* index of files[0]: 1 before DWARF 5, 0 since */
};

static uint64_t read_n(struct cursor *c, size_t n)
{
	uint64_t v = 0;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		c->p = c->end;
		return 0;
	}
	for (size_t i = 0; i < n; i++) /* little endian: the only byte order libdw maps as is here */
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

/* A LEB128 number's bits; *shift says how many were read and *last is its final byte. */
static uint64_t read_leb(struct cursor *c, unsigned *shift, uint8_t *last)
{
	uint64_t v = 0;

	*shift = 0;
	*last = 0;
	while (!c->bad) {
		if (c->p >= c->end) {
			c->bad = true;
			return 0;
		}
		*last = *c->p++;
		if (*shift < 64)
			v |= (uint64_t)(*last & 0x7f) << *shift;
		*shift += 7;
		if (!(*last & 0x80))
			break;
	}
	return v;
}

static uint64_t read_uleb(struct cursor *c)
{
	unsigned shift;
	uint8_t last;

	return read_leb(c, &shift, &last);
}

static int64_t read_sleb(struct cursor *c)
{
	unsigned shift;
	uint8_t last;
	uint64_t v = read_leb(c, &shift, &last);

	if (shift < 64 && (last & 0x40))
		v |= ~0ULL << shift;
	return (int64_t)v;
}

/* A NUL-terminated string at the cursor (inside the unit), or NULL. */
static const char *read_cstr(struct cursor *c)
{
	const uint8_t *nul;
	const char *s;

	if (c->bad || !(nul = memchr(c->p, 0, (size_t)(c->end - c->p)))) {
		c->bad = true;
		return NULL;
	}
	s = (const char *)c->p;
	c->p = nul + 1;
	return s;
}

/* The string at off in sec, when NUL-terminated inside it. */
static const char *section_str(const struct section *sec, uint64_t off)
{
	if (!sec->data || off >= sec->size || !memchr(sec->data + off, 0, sec->size - off))
		return NULL;
	return (const char *)sec->data + off;
}

static bool find_sections(Dwarf *dwarf, struct section *line, struct section *line_str, struct section *str)
{
	Elf *elf = dwarf_getelf(dwarf);
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		struct section *want = NULL;
		GElf_Shdr shdr;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".debug_line"))
			want = line;
		else if (!strcmp(name, ".debug_line_str"))
			want = line_str;
		else if (!strcmp(name, ".debug_str"))
			want = str;
		if (!want)
			continue;
		/* libdw decompresses the sections it uses in place; one still compressed is not ours. */
		if (shdr.sh_flags & SHF_COMPRESSED)
			return false;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			return false;
		*want = (struct section){ .data = d->d_buf, .size = d->d_size };
	}
	return line->data != NULL;
}

/* One value of a DWARF 5 directory/file entry; strings come back through *s. */
static bool read_form(struct cursor *c, uint64_t form, unsigned offset_size, const struct section *line_str,
		      const struct section *str, const char **s, uint64_t *u)
{
	*s = NULL;
	*u = 0;
	switch (form) {
	case DW_FORM_string:
		*s = read_cstr(c);
		break;
	case DW_FORM_line_strp:
		*s = section_str(line_str, read_n(c, offset_size));
		return !c->bad && *s;
	case DW_FORM_strp:
		*s = section_str(str, read_n(c, offset_size));
		return !c->bad && *s;
	case DW_FORM_udata:
		*u = read_uleb(c);
		break;
	case DW_FORM_data1:
		*u = read_n(c, 1);
		break;
	case DW_FORM_data2:
		*u = read_n(c, 2);
		break;
	case DW_FORM_data4:
		*u = read_n(c, 4);
		break;
	case DW_FORM_data8:
		*u = read_n(c, 8);
		break;
	case DW_FORM_data16:
		read_n(c, 8);
		read_n(c, 8);
		break;
	case DW_FORM_block: {
		uint64_t n = read_uleb(c);

		if (n > (uint64_t)(c->end - c->p))
			return false;
		c->p += n;
		break;
	}
	default:
		return false; /* strx, strp_sup, GNU alternates: libdw's business */
	}
	return !c->bad;
}

/* DWARF 5: an entry format, then count entries; each entry's path and directory index. */
static int read_v5_table(struct cursor *c, unsigned offset_size, const struct section *line_str,
			 const struct section *str, const char ***names, uint64_t **dir_of, size_t *count)
{
	uint64_t types[16], forms[16], n;
	uint8_t nformats = (uint8_t)read_n(c, 1);

	if (nformats > 16)
		return -ENOTSUP;
	for (unsigned i = 0; i < nformats; i++) {
		types[i] = read_uleb(c);
		forms[i] = read_uleb(c);
	}
	n = read_uleb(c);
	if (c->bad || n > DWARF_LINES_MAX_FILES)
		return -EINVAL;
	*names = calloc(n ? n : 1, sizeof(**names));
	if (dir_of)
		*dir_of = calloc(n ? n : 1, sizeof(**dir_of));
	if (!*names || (dir_of && !*dir_of))
		return -ENOMEM;
	for (uint64_t e = 0; e < n; e++) {
		for (unsigned i = 0; i < nformats; i++) {
			const char *s;
			uint64_t u;

			if (!read_form(c, forms[i], offset_size, line_str, str, &s, &u))
				return c->bad ? -EINVAL : -ENOTSUP;
			if (types[i] == DW_LNCT_path)
				(*names)[e] = s;
			else if (types[i] == DW_LNCT_directory_index && dir_of)
				(*dir_of)[e] = u;
		}
	}
	*count = (size_t)n;
	return 0;
}

static int read_v5_tables(struct dwarf_lines *l, struct cursor *c, unsigned offset_size,
			  const struct section *line_str, const struct section *str)
{
	const char **names = NULL;
	uint64_t *dirs = NULL;
	size_t n = 0;
	int r = read_v5_table(c, offset_size, line_str, str, &l->dirs, NULL, &l->ndirs);

	if (r)
		return r;
	r = read_v5_table(c, offset_size, line_str, str, &names, &dirs, &n);
	if (!r) {
		l->files = calloc(n ? n : 1, sizeof(*l->files));
		if (!l->files)
			r = -ENOMEM;
		for (size_t i = 0; !r && i < n; i++)
			l->files[i] = (struct line_file){ .name = names[i], .dir = dirs[i] };
		l->nfiles = n;
	}
	free(names);
	free(dirs);
	l->first_file = 0;
	return r;
}

/* DWARF 2-4: NUL-terminated lists of directories and of files (name, dir, mtime, size). */
static int read_v4_tables(struct dwarf_lines *l, struct cursor *c)
{
	struct cursor scan = *c;
	size_t ndirs = 0, nfiles = 0;

	/* Count first so each table is one allocation. */
	while (!scan.bad && scan.p < scan.end && *scan.p) {
		read_cstr(&scan);
		if (++ndirs > DWARF_LINES_MAX_FILES)
			return -EINVAL;
	}
	read_n(&scan, 1);
	while (!scan.bad && scan.p < scan.end && *scan.p) {
		read_cstr(&scan);
		read_uleb(&scan);
		read_uleb(&scan);
		read_uleb(&scan);
		if (++nfiles > DWARF_LINES_MAX_FILES)
			return -EINVAL;
	}
	read_n(&scan, 1);
	if (scan.bad)
		return -EINVAL;
	l->dirs = calloc(ndirs ? ndirs : 1, sizeof(*l->dirs));
	l->files = calloc(nfiles ? nfiles : 1, sizeof(*l->files));
	if (!l->dirs || !l->files)
		return -ENOMEM;
	for (size_t i = 0; i < ndirs; i++)
		l->dirs[i] = read_cstr(c);
	read_n(c, 1);
	for (size_t i = 0; i < nfiles; i++) {
		l->files[i].name = read_cstr(c);
		l->files[i].dir = read_uleb(c);
		read_uleb(c);
		read_uleb(c);
	}
	read_n(c, 1);
	l->ndirs = ndirs;
	l->nfiles = nfiles;
	l->first_file = 1;
	return c->bad ? -EINVAL : 0;
}

static int parse_header(struct dwarf_lines *l, const struct section *line, uint64_t offset,
			const struct section *line_str, const struct section *str)
{
	struct cursor c = { line->data + offset, line->data + line->size, false }, hdr;
	unsigned offset_size = 4;
	uint64_t unit_length, header_length;
	uint8_t max_ops = 1;
	int r;

	unit_length = read_n(&c, 4);
	if (unit_length == 0xffffffff) {
		unit_length = read_n(&c, 8);
		offset_size = 8;
	} else if (unit_length >= 0xfffffff0) {
		return -EINVAL;
	}
	if (c.bad || unit_length > (uint64_t)(c.end - c.p))
		return -EINVAL;
	c.end = c.p + unit_length;
	l->version = (unsigned)read_n(&c, 2);
	if (l->version < 2 || l->version > 5)
		return -ENOTSUP;
	if (l->version >= 5) {
		read_n(&c, 1); /* address size: DW_LNE_set_address says its own */
		if (read_n(&c, 1) != 0)
			return -ENOTSUP; /* segmented addresses */
	}
	header_length = read_n(&c, offset_size);
	if (c.bad || header_length > (uint64_t)(c.end - c.p))
		return -EINVAL;
	l->program = c.p + header_length;
	l->end = c.end;
	hdr = (struct cursor){ c.p, l->program, false };
	l->min_inst_len = (uint8_t)read_n(&hdr, 1);
	if (l->version >= 4)
		max_ops = (uint8_t)read_n(&hdr, 1);
	l->default_is_stmt = read_n(&hdr, 1) != 0;
	l->line_base = (int8_t)read_n(&hdr, 1);
	l->line_range = (uint8_t)read_n(&hdr, 1);
	l->opcode_base = (uint8_t)read_n(&hdr, 1);
	if (hdr.bad || !l->line_range || !l->opcode_base)
		return -EINVAL;
	if (max_ops != 1)
		return -ENOTSUP; /* VLIW op_index: leave it to libdw */
	for (unsigned i = 1; i < l->opcode_base; i++)
		l->std_lengths[i] = (uint8_t)read_n(&hdr, 1);
	r = l->version >= 5 ? read_v5_tables(l, &hdr, offset_size, line_str, str) : read_v4_tables(l, &hdr);
	if (r)
		return r;
	return hdr.bad ? -EINVAL : 0;
}

struct dwarf_lines *dwarf_lines_open(Dwarf *dwarf, Dwarf_Die *cudie)
{
	struct section line = { 0 }, line_str = { 0 }, str = { 0 };
	struct dwarf_lines *l;
	Dwarf_Attribute attr;
	Dwarf_Word offset;
	int r;

	if (!dwarf_attr(cudie, DW_AT_stmt_list, &attr) || dwarf_formudata(&attr, &offset)) {
		errno = ENOENT;
		return NULL;
	}
	if (!find_sections(dwarf, &line, &line_str, &str) || offset >= line.size) {
		errno = ENOTSUP;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	l->comp_dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
	r = parse_header(l, &line, offset, &line_str, &str);
	if (r) {
		dwarf_lines_free(l);
		errno = -r;
		return NULL;
	}
	return l;
}

void dwarf_lines_free(struct dwarf_lines *l)
{
	if (!l)
		return;
	free(l->dirs);
	free(l->files);
	free(l);
}

/* The state machine's registers (DWARF 5 section 6.2.2) that a row reports. */
struct regs {
	uint64_t address, file, line, column;
};

int dwarf_lines_find(const struct dwarf_lines *l, uint64_t pc, struct dwarf_line_row *row)
{
	struct cursor c = { l->program, l->end, false };
	struct regs r = { .file = 1, .line = 1 }, best = { 0 };
	bool have = false; /* best is a row of the current sequence at or below pc */
	bool found = false;
	unsigned adjusted;
	int emit;

	while (c.p < c.end && !c.bad) {
		uint8_t op = *c.p++;

		emit = 0; /* 1: a row, 2: the end of a sequence */
		if (op >= l->opcode_base) {
			adjusted = (unsigned)(op - l->opcode_base);
			r.address += (uint64_t)(adjusted / l->line_range) * l->min_inst_len;
			r.line += (uint64_t)(int64_t)(l->line_base + (int)(adjusted % l->line_range));
			emit = 1;
		} else if (op == 0) {
			uint64_t len = read_uleb(&c);
			const uint8_t *next;
			uint8_t sub;

			if (c.bad || !len || len > (uint64_t)(c.end - c.p))
				return -EINVAL;
			next = c.p + len;
			sub = *c.p++;
			if (sub == DW_LNE_end_sequence)
				emit = 2;
			else if (sub == DW_LNE_set_address && len - 1 <= 8)
				r.address = read_n(&c, (size_t)(len - 1));
			/* define_file, set_discriminator, vendor extensions: nothing a row needs */
			c.p = next;
		} else {
			switch (op) {
			case DW_LNS_copy:
				emit = 1;
				break;
			case DW_LNS_advance_pc:
				r.address += read_uleb(&c) * l->min_inst_len;
				break;
			case DW_LNS_advance_line:
				r.line += (uint64_t)read_sleb(&c);
				break;
			case DW_LNS_set_file:
				r.file = read_uleb(&c);
				break;
			case DW_LNS_set_column:
				r.column = read_uleb(&c);
				break;
			case DW_LNS_const_add_pc:
				r.address += (uint64_t)((255u - l->opcode_base) / l->line_range) * l->min_inst_len;
				break;
			case DW_LNS_fixed_advance_pc:
				r.address += read_n(&c, 2);
				break;
			case DW_LNS_negate_stmt:
			case DW_LNS_set_basic_block:
			case DW_LNS_set_prologue_end:
			case DW_LNS_set_epilogue_begin:
				break;
			default: /* set_isa and opcodes this reader does not know: skip their operands */
				for (unsigned i = 0; i < l->std_lengths[op]; i++)
					read_uleb(&c);
				break;
			}
		}
		if (emit == 1) {
			/* Rows of a sequence ascend: the first one past pc settles the answer. */
			if (r.address > pc && have) {
				found = true;
				break;
			}
			if (r.address <= pc) {
				best = r;
				have = true;
			}
		} else if (emit == 2) {
			if (have && pc < r.address) {
				found = true;
				break;
			}
			have = false;
			r = (struct regs){ .file = 1, .line = 1 };
		}
	}
	if (c.bad)
		return -EINVAL;
	if (!found)
		return -ENOENT; /* no sequence holds pc, or the last one was never closed */
	row->file = best.file;
	row->line = best.line <= UINT32_MAX ? (uint32_t)best.line : 0;
	row->column = best.column <= UINT32_MAX ? (uint32_t)best.column : 0;
	return 0;
}

bool dwarf_lines_file(const struct dwarf_lines *l, uint64_t i, char *buf, size_t size)
{
	const struct line_file *f;
	const char *dir = NULL;
	size_t nlen, dlen;

	if (i < l->first_file || i - l->first_file >= l->nfiles)
		return false;
	f = &l->files[i - l->first_file];
	if (!f->name)
		return false;
	if (f->name[0] != '/') {
		if (l->version >= 5)
			dir = f->dir < l->ndirs ? l->dirs[f->dir] : NULL;
		else
			dir = f->dir == 0 ? l->comp_dir : f->dir <= l->ndirs ? l->dirs[f->dir - 1] : NULL;
	}
	nlen = strlen(f->name);
	dlen = dir && *dir ? strlen(dir) : 0;
	if (dlen + 1 + nlen >= size)
		return false;
	if (dlen) {
		memcpy(buf, dir, dlen);
		buf[dlen++] = '/';
	}
	memcpy(buf + dlen, f->name, nlen + 1);
	return true;
}

size_t dwarf_lines_bytes(const struct dwarf_lines *l)
{
	return sizeof(*l) + l->ndirs * sizeof(*l->dirs) + l->nfiles * sizeof(*l->files);
}
