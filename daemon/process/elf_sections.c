// SPDX-License-Identifier: Apache-2.0
#include "process/elf_sections.h"

Elf_Scn *elf_sections_next_table(Elf *elf, Elf_Scn *scn, GElf_Word type, size_t max, GElf_Shdr *sh,
				 Elf_Data **data, size_t *n)
{
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, sh) || sh->sh_type != type || !sh->sh_entsize)
			continue;
		*n = sh->sh_size / sh->sh_entsize;
		*data = *n > max ? NULL : elf_getdata(scn, NULL);
		return scn;
	}
	return NULL;
}
