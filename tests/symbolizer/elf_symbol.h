/* SPDX-License-Identifier: Apache-2.0 */
/* For the symbolizer's cmocka tests (include it after cmocka.h): a function's address from an ELF
 * file's symbol table. */
#ifndef OTELPROF_TEST_ELF_SYMBOL_H
#define OTELPROF_TEST_ELF_SYMBOL_H

#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* The value of the symbol name in the ELF file at path (a function's vaddr; in a PIE's text, also
 * its file offset); the test fails when there is none. */
static uint64_t symbol_vaddr(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	uint64_t found = 0;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	while ((scn = elf_nextscn(elf, scn)) && !found) {
		GElf_Shdr shdr;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_SYMTAB || !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; i++) {
			GElf_Sym sym;
			const char *s;

			if (gelf_getsym(data, (int)i, &sym) && (s = elf_strptr(elf, shdr.sh_link, sym.st_name)) &&
			    !strcmp(s, name))
				found = sym.st_value;
		}
	}
	elf_end(elf);
	close(fd);
	assert_true(found != 0);
	return found;
}

#endif
