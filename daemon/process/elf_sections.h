/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tables of a foreign ELF file (symbols, relocations): the sections of one type whose entries
 * have a fixed size, each with its data, bounded so that a malformed file cannot have a reader walk
 * millions of entries. Used by thread_ctx.c and python_process.c; the caller owns the Elf.
 */
#ifndef OTELPROFD_ELF_SECTIONS_H
#define OTELPROFD_ELF_SECTIONS_H

#include <gelf.h>
#include <stddef.h>

/*
 * The next section after scn (NULL: from the first) of this type with fixed-size entries, or NULL
 * when there is none. *sh is its header and *n its number of entries; *data is its data, or NULL
 * when it cannot be read or has more than max entries. The caller says what that means: a file has
 * one .dynsym (the walk ends), relocations come in several sections (the next may serve).
 */
Elf_Scn *elf_sections_next_table(Elf *elf, Elf_Scn *scn, GElf_Word type, size_t max, GElf_Shdr *sh,
				 Elf_Data **data, size_t *n);

#endif
