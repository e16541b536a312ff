// SPDX-License-Identifier: Apache-2.0
/*
 * .debug_frame alone, for a module whose DWARF is not opened (the cheaper tier, or DWARF over its
 * bound): code built without .eh_frame entries (gcc -fno-asynchronous-unwind-tables -g, some
 * embedded toolchains) still unwinds, and nothing else of the debug info is read or inflated.
 * libdw reads .debug_frame only through a Dwarf handle, and opening the file's own would read
 * (and inflate) every .debug_* section: the section is copied into a small ELF image of its own
 * (an ELF header, the section, its name table) that libdw opens instead.
 */
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "elf_module_internal.h"

/* The image: the header, the section's bytes, the name table, then three section headers. */
static const char frame_names[] = "\0.debug_frame\0.shstrtab";
#define NAME_DEBUG_FRAME 1
#define NAME_SHSTRTAB 14

/* The .debug_frame section of elf, inflated when compressed, or NULL. */
static Elf_Data *debug_frame_data(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	for (size_t i = 0; i < ELF_COST_MAX_SECTIONS && (scn = elf_nextscn(elf, scn)); i++) {
		GElf_Shdr shdr;
		const char *name;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".debug_frame") && (shdr.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			return NULL;
		if (!strcmp(name, ".zdebug_frame") && elf_compress_gnu(scn, 0, 0) < 0)
			return NULL;
		if (!strcmp(name, ".debug_frame") || !strcmp(name, ".zdebug_frame"))
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

/* An ELF image holding .debug_frame's bytes alone, with the file's class, byte order and machine. */
static char *frame_image(const GElf_Ehdr *ehdr, const Elf_Data *data, size_t *size)
{
	size_t names_at = sizeof(Elf64_Ehdr) + data->d_size, shdrs_at = (names_at + sizeof(frame_names) + 7) & ~(size_t)7;
	char *image;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;

	*size = shdrs_at + 3 * sizeof(Elf64_Shdr);
	image = calloc(1, *size);
	if (!image)
		return NULL;
	eh = (Elf64_Ehdr *)image;
	memcpy(eh->e_ident, ehdr->e_ident, EI_NIDENT);
	eh->e_type = ehdr->e_type;
	eh->e_machine = ehdr->e_machine;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shoff = shdrs_at;
	eh->e_shnum = 3;
	eh->e_shstrndx = 2;
	memcpy(image + sizeof(Elf64_Ehdr), data->d_buf, data->d_size);
	memcpy(image + names_at, frame_names, sizeof(frame_names));
	sh = (Elf64_Shdr *)(image + shdrs_at);
	sh[1] = (Elf64_Shdr){ .sh_name = NAME_DEBUG_FRAME, .sh_type = SHT_PROGBITS, .sh_offset = sizeof(Elf64_Ehdr),
			      .sh_size = data->d_size, .sh_addralign = 8 };
	sh[2] = (Elf64_Shdr){ .sh_name = NAME_SHSTRTAB, .sh_type = SHT_STRTAB, .sh_offset = names_at,
			      .sh_size = sizeof(frame_names), .sh_addralign = 1 };
	return image;
}

Dwarf_CFI *elf_module__frame_cfi(struct elf_module *m)
{
	GElf_Addr bias;
	GElf_Ehdr ehdr;
	Elf *elf;
	Elf_Data *data;
	size_t size;

	if (m->frame_tried)
		return m->frame_cfi;
	m->frame_tried = true;
	elf = dwfl_module_getelf(m->mod, &bias);
	/* 64-bit files in this host's byte order: the image is built with this host's structs. */
	if (!elf || !gelf_getehdr(elf, &ehdr) || ehdr.e_ident[EI_CLASS] != ELFCLASS64 ||
	    ehdr.e_ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB))
		return NULL;
	data = debug_frame_data(elf);
	if (!data || !data->d_buf || !data->d_size)
		return NULL;
	if (!elf_module__affords(m, 2 * data->d_size)) { /* the inflated section and its copy */
		elf_module__refused(m, 2 * data->d_size);
		return NULL;
	}
	m->frame_image = frame_image(&ehdr, data, &size);
	if (!m->frame_image)
		return NULL;
	m->counters.index_builds_at_lookup++; /* an index the open does not build: rarely needed */
	m->libdw_bytes += 2 * data->d_size;
	m->frame_elf = elf_memory(m->frame_image, size);
	m->frame_dwarf = m->frame_elf ? dwarf_begin_elf(m->frame_elf, DWARF_C_READ, NULL) : NULL;
	m->frame_cfi = m->frame_dwarf ? dwarf_getcfi(m->frame_dwarf) : NULL;
	return m->frame_cfi;
}

void elf_module__frame_free(struct elf_module *m)
{
	if (m->frame_dwarf)
		dwarf_end(m->frame_dwarf);
	if (m->frame_elf)
		elf_end(m->frame_elf);
	free(m->frame_image);
}
