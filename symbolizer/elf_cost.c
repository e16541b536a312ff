// SPDX-License-Identifier: Apache-2.0
#include "elf_cost.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/*
 * Most decompressed bytes one compressed byte may claim. zlib cannot exceed ~1032:1 at all; real
 * debug sections compress 2.6:1 on average and 83:1 at most (2,160 compressed sections of this
 * host's /usr/lib/debug, measured), so 512:1 leaves a wide margin and a claim above it is a forgery.
 */
#define ZLIB_MAX_RATIO 512
/*
 * .gnu_debugdata (MiniDebugInfo) is an xz-compressed ELF that libdwfl inflates to its end with no
 * declared size to hold it to: it is charged at xz's worst ratio (zeros under xz -9e: 6,843:1,
 * measured on 200 MiB).
 */
#define XZ_MAX_RATIO 8192

size_t elf_cost_add(size_t a, size_t b, size_t c)
{
	if (a > SIZE_MAX - b || a + b > SIZE_MAX - c)
		return SIZE_MAX;
	return a + b + c;
}

/* What a section of raw bytes declaring claim decompressed bytes costs: SIZE_MAX when forged. */
static size_t claim_cost(uint64_t claim, uint64_t raw)
{
	return claim / ZLIB_MAX_RATIO > raw ? SIZE_MAX : (size_t)claim;
}

/* The size a GNU .zdebug section declares: "ZLIB" and the size, big endian. */
static int zdebug_claim(Elf_Scn *scn, uint64_t *size)
{
	Elf_Data *d = elf_rawdata(scn, NULL);

	if (!d || d->d_size < 12 || memcmp(d->d_buf, "ZLIB", 4))
		return -ENOEXEC;
	*size = 0;
	for (int i = 0; i < 8; i++)
		*size = *size << 8 | ((const unsigned char *)d->d_buf)[4 + i];
	return 0;
}

int elf_cost_of(Elf *elf, struct elf_cost *cost)
{
	size_t shnum, shstrndx, debugdata = 0;
	Elf_Scn *scn = NULL;
	bool has_symtab = false;

	if (elf_kind(elf) != ELF_K_ELF)
		return -ENOEXEC;
	if (elf_getshdrnum(elf, &shnum) || elf_getshdrstrndx(elf, &shstrndx))
		return -ENOEXEC;
	if (shnum > ELF_COST_MAX_SECTIONS)
		return -EFBIG;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *name;
		uint64_t claim = 0;
		bool inflated = false;

		if (!gelf_getshdr(scn, &shdr))
			return -ENOEXEC;
		if (shdr.sh_type == SHT_NOBITS)
			continue;
		if (shdr.sh_size > ELF_COST_MAX_SECTION_BYTES)
			return -EFBIG;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name)
			name = "";
		if (shdr.sh_flags & SHF_COMPRESSED) {
			GElf_Chdr chdr;

			if (!gelf_getchdr(scn, &chdr))
				return -EFBIG;
			claim = chdr.ch_size;
			inflated = true;
		} else if (!strncmp(name, ".zdebug", 7)) {
			if (zdebug_claim(scn, &claim))
				return -ENOEXEC;
			inflated = true;
		}
		if (claim > ELF_COST_MAX_SECTION_BYTES)
			return -EFBIG;
		if (inflated && (!strncmp(name, ".debug", 6) || !strncmp(name, ".zdebug", 7)))
			cost->dwarf = elf_cost_add(cost->dwarf, claim_cost(claim, shdr.sh_size), 0);
		else if (inflated)
			cost->symbols = elf_cost_add(cost->symbols, claim_cost(claim, shdr.sh_size), 0);
		if (!strcmp(name, ".eh_frame") || !strcmp(name, ".debug_frame"))
			cost->cfi += shdr.sh_size;
		has_symtab |= shdr.sh_type == SHT_SYMTAB;
		if (!strcmp(name, ".gnu_debugdata"))
			debugdata = shdr.sh_size;
	}
	/* libdwfl reads .gnu_debugdata only when the file has no symbol table of its own. */
	if (!has_symtab && debugdata)
		cost->symbols = elf_cost_add(cost->symbols, debugdata > SIZE_MAX / XZ_MAX_RATIO ? SIZE_MAX :
							    debugdata * XZ_MAX_RATIO, 0);
	return 0;
}
