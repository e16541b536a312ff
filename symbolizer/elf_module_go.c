// SPDX-License-Identifier: Apache-2.0
/*
 * A module's Go side: finds .gopclntab (and what reading it needs: .text, .noptrdata, the loaded
 * segments) in the file's section headers, opens it (gopclntab.c), and reads the Go build id from
 * .note.go.buildid. The bytes stay where libelf has them (the file's mapping): nothing is copied.
 */
#include "elf_module_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "go_unwind.h"
#include "gopclntab.h"

/* The Go linker's note: name "Go", type 4 (cmd/link ELF_NOTE_GOBUILDID_TAG), the id as text. */
#define GO_NOTE_BUILDID 4
#define GO_BUILD_ID_MAX 256

struct go_sections {
	const uint8_t *pclntab, *noptrdata, *note;
	size_t pclntab_size, noptrdata_size, note_size;
	uint64_t pclntab_vaddr, text_vaddr, text_size;
};

/* A section's file bytes, checked to lie inside the file; NULL for NOBITS or out of bounds. */
static const uint8_t *section_bytes(const uint8_t *image, size_t size, const GElf_Shdr *shdr)
{
	if (shdr->sh_type == SHT_NOBITS || shdr->sh_offset > size || shdr->sh_size > size - shdr->sh_offset)
		return NULL;
	return image + shdr->sh_offset;
}

static void find_sections(Elf *elf, const uint8_t *image, size_t size, struct go_sections *g)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool go_module = false;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	for (size_t i = 0; i < ELF_COST_MAX_SECTIONS && (scn = elf_nextscn(elf, scn)); i++) {
		GElf_Shdr shdr;
		const char *name;
		const uint8_t *bytes;

		if (!gelf_getshdr(scn, &shdr) || !(name = elf_strptr(elf, shstrndx, shdr.sh_name)))
			continue;
		if (!strcmp(name, ".text")) {
			g->text_vaddr = shdr.sh_addr;
			g->text_size = shdr.sh_size;
			continue;
		}
		if (!(bytes = section_bytes(image, size, &shdr)))
			continue;
		/* A PIE's read-only data after relocation: the linker prefixes the name. */
		if (!strcmp(name, ".gopclntab") || !strcmp(name, ".data.rel.ro.gopclntab")) {
			g->pclntab = bytes;
			g->pclntab_size = shdr.sh_size;
			g->pclntab_vaddr = shdr.sh_addr;
		} else if (!strcmp(name, ".go.module")) {
			/* Go 1.26+ gives runtime.firstmoduledata a section of its own. */
			g->noptrdata = bytes;
			g->noptrdata_size = shdr.sh_size;
			go_module = true;
		} else if (!strcmp(name, ".noptrdata") && !go_module) {
			g->noptrdata = bytes;
			g->noptrdata_size = shdr.sh_size;
		} else if (!strcmp(name, ".note.go.buildid")) {
			g->note = bytes;
			g->note_size = shdr.sh_size;
		}
	}
}

static uint32_t note_word(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v; /* the file's byte order: only little-endian pclntabs are read anyway */
}

/* The Go build id of the note's first entry, as printable text; NULL when absent or malformed. */
static char *read_go_build_id(const uint8_t *note, size_t size)
{
	uint32_t namesz, descsz;
	size_t desc;
	char *id;

	if (!note || size < 12)
		return NULL;
	namesz = note_word(note);
	descsz = note_word(note + 4);
	/* "Go" and its NUL, with or without the padding counted */
	if ((namesz != 3 && namesz != 4) || note_word(note + 8) != GO_NOTE_BUILDID || memcmp(note + 12, "Go", 3))
		return NULL;
	desc = 12 + 4; /* the name, padded to four bytes */
	if (size < desc || !descsz || descsz > GO_BUILD_ID_MAX || descsz > size - desc)
		return NULL;
	for (uint32_t i = 0; i < descsz; i++)
		if (note[desc + i] < 0x21 || note[desc + i] > 0x7e)
			return NULL;
	id = malloc(descsz + 1);
	if (!id)
		return NULL;
	memcpy(id, note + desc, descsz);
	id[descsz] = '\0';
	return id;
}

void elf_module__go_open(struct elf_module *m)
{
	struct gopclntab_segment segs[MAX_LOAD_SEGMENTS];
	struct go_sections g = { 0 };
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(m->mod, &bias);
	const uint8_t *image;
	size_t size, nsegs = 0;

	if (!elf || !(image = (const uint8_t *)elf_rawfile(elf, &size)))
		return;
	find_sections(elf, image, size, &g);
	m->go_build_id = read_go_build_id(g.note, g.note_size);
	if (m->go_build_id)
		m->own_bytes += strlen(m->go_build_id) + 1;
	if (!g.pclntab)
		return;
	for (size_t i = 0; i < m->nsegments; i++) {
		const struct load_segment *s = &m->segments[i];

		if (s->offset > size)
			continue;
		segs[nsegs++] = (struct gopclntab_segment){
			.vaddr = s->vaddr, .data = image + s->offset,
			.size = s->filesz < size - s->offset ? s->filesz : size - s->offset,
		};
	}
	m->go = gopclntab_open(&(struct gopclntab_input){
		.table = g.pclntab, .table_size = g.pclntab_size, .table_vaddr = g.pclntab_vaddr,
		.text_vaddr = g.text_vaddr, .text_size = g.text_size,
		.noptrdata = g.noptrdata, .noptrdata_size = g.noptrdata_size,
		.segments = segs, .nsegments = nsegs,
	});
	if (m->go)
		m->own_bytes += gopclntab_bytes(m->go);
	else
		m->counters.go_refused++;
}

bool elf_module_is_go(const struct elf_module *m)
{
	return m->go != NULL;
}

const char *elf_module_go_build_id(const struct elf_module *m)
{
	return m->go_build_id;
}

bool elf_module_go_top_frame(const struct elf_module *m, uint64_t vaddr)
{
	return m->go && gopclntab_top_frame(m->go, vaddr);
}

enum go_unwind_kind elf_module_go_rule(const struct elf_module *m, uint64_t vaddr, struct cfi_rule *rule)
{
	return m->go && gopclntab_covers(m->go, vaddr) ? go_unwind_rule(m->go, vaddr, rule) : GO_UNWIND_NONE;
}

/* Go text answered from the pclntab; false when vaddr is outside it (cgo's C code, or no table). */
bool elf_module__go_lookup(struct elf_module *m, uint64_t vaddr, struct sym_line *out, unsigned *n)
{
	struct gopclntab_frame frames[SYM_MAX_INLINE];
	bool truncated;

	if (!m->go || !gopclntab_covers(m->go, vaddr))
		return false;
	m->counters.go_lookups++;
	*n = gopclntab_lookup(m->go, vaddr, frames, SYM_MAX_INLINE, &truncated);
	if (truncated)
		m->counters.inline_truncated++;
	for (unsigned i = 0; i < *n; i++)
		/* Go names are not mangled: the name is both. */
		out[i] = (struct sym_line){
			.function = frames[i].function, .system_name = frames[i].function,
			.file = frames[i].file, .line = frames[i].line,
		};
	return true;
}
