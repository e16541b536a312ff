// SPDX-License-Identifier: Apache-2.0
#include "process/usdt_notes.h"

#include <gelf.h>
#include <libelf.h>
#include <string.h>

#define NT_STAPSDT 3

/* The provider of one note's descriptor: three 8-byte addresses (probe, base, semaphore), then
 * "provider\0name\0args\0". */
static bool note_names(const char *desc, size_t size, const char *provider)
{
	size_t len = strlen(provider);

	return size > 24 + len && !memcmp(desc + 24, provider, len) && desc[24 + len] == 0;
}

static bool section_has(Elf_Data *data, const char *provider, unsigned *seen)
{
	size_t offset = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while (offset < data->d_size && (next = gelf_getnote(data, offset, &nh, &name_off, &desc_off)) > 0) {
		if (++*seen > USDT_NOTES_MAX)
			return false;
		if (nh.n_type == NT_STAPSDT && nh.n_namesz == 8 &&
		    !memcmp((const char *)data->d_buf + name_off, "stapsdt", 8) &&
		    desc_off + nh.n_descsz <= data->d_size &&
		    note_names((const char *)data->d_buf + desc_off, nh.n_descsz, provider))
			return true;
		offset = next;
	}
	return false;
}

bool usdt_notes_have_provider(int fd, const char *provider)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t shstrndx;
	unsigned seen = 0, sections = 0;
	bool found = false;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    elf_getshdrstrndx(elf, &shstrndx))
		goto out;
	while (!found && (scn = elf_nextscn(elf, scn)) && ++sections < 65536) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".note.stapsdt") || !(data = elf_getdata(scn, NULL)) || !data->d_buf)
			continue;
		found = section_has(data, provider, &seen);
	}
out:
	elf_end(elf);
	return found;
}
