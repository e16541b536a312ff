// SPDX-License-Identifier: Apache-2.0
#include "process/elf_dynsym.h"

#include <stdint.h>
#include <string.h>

#include "process/elf_sections.h"

/* The header of .gnu.hash: then bloom_size 64-bit words, nbuckets 32-bit buckets, the chains. */
struct gnu_hash_header {
	uint32_t nbuckets, symoffset, bloom_size, bloom_shift;
};

static uint32_t gnu_hash(const char *name)
{
	uint32_t h = 5381;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	return h;
}

static bool wanted(struct elf_dynsym_want *w, const GElf_Sym *sym, size_t index)
{
	if (w->found || sym->st_shndx == SHN_UNDEF || (w->accept && !w->accept(sym)))
		return false;
	w->found = true;
	w->sym = *sym;
	w->index = index;
	return true;
}

static void clear(struct elf_dynsym_want *want, size_t n)
{
	for (size_t k = 0; k < n; k++)
		want[k].found = false;
}

/* .dynsym: its header, data and entry count; false when the file has none (or it is too large). */
static bool dynsym_of(Elf *elf, size_t max_entries, Elf_Scn **scn, GElf_Shdr *sh, Elf_Data **data, size_t *count)
{
	/* A file has one .dynsym: the first table of the type. */
	*scn = elf_sections_next_table(elf, NULL, SHT_DYNSYM, max_entries, sh, data, count);
	return *scn && *data;
}

/* The entry-by-entry scan of a .dynsym already found (want cleared). */
static size_t scan(Elf *elf, const GElf_Shdr *sh, Elf_Data *data, size_t count, struct elf_dynsym_want *want,
		   size_t n)
{
	size_t found = 0;

	for (size_t i = 1; i < count && found < n; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		for (size_t k = 0; name && k < n; k++)
			if (!strcmp(name, want[k].name) && wanted(&want[k], &sym, i))
				found++;
	}
	return found;
}

size_t elf_dynsym_lookup_scan(Elf *elf, struct elf_dynsym_want *want, size_t n, size_t max_entries)
{
	Elf_Data *data;
	GElf_Shdr sh;
	Elf_Scn *scn;
	size_t count;

	clear(want, n);
	return dynsym_of(elf, max_entries, &scn, &sh, &data, &count) ? scan(elf, &sh, data, count, want, n) : 0;
}

/* The .gnu.hash section of the .dynsym at index dynsym_index, or NULL. */
static Elf_Data *gnu_hash_of(Elf *elf, size_t dynsym_index)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_HASH && sh.sh_link == dynsym_index)
			return elf_getdata(scn, NULL);
	return NULL;
}

/*
 * One name through the hash: 1 found, 0 not there, -1 the table does not hold together (the caller
 * scans instead). Every index is checked against the section sizes: the file may be hostile.
 */
static int hash_find(Elf *elf, const GElf_Shdr *dynsym, Elf_Data *symbols, size_t count, const uint8_t *hash,
		     size_t hash_size, struct elf_dynsym_want *w)
{
	struct gnu_hash_header hdr;
	size_t buckets_at, chains_at, nchains;
	uint32_t h = gnu_hash(w->name), index;

	memcpy(&hdr, hash, sizeof(hdr));
	buckets_at = sizeof(hdr) + (size_t)hdr.bloom_size * 8;
	chains_at = buckets_at + (size_t)hdr.nbuckets * 4;
	if (!hdr.nbuckets || hdr.bloom_size > hash_size / 8 || hdr.nbuckets > hash_size / 4 || chains_at > hash_size)
		return -1;
	nchains = (hash_size - chains_at) / 4;
	memcpy(&index, hash + buckets_at + (size_t)(h % hdr.nbuckets) * 4, 4);
	if (!index)
		return 0; /* an empty bucket */
	if (index < hdr.symoffset)
		return -1;
	for (size_t steps = 0; steps < nchains; steps++, index++) {
		uint32_t chain;
		GElf_Sym sym;
		const char *name;

		if (index - hdr.symoffset >= nchains || index >= count)
			return -1;
		memcpy(&chain, hash + chains_at + (size_t)(index - hdr.symoffset) * 4, 4);
		if ((chain | 1) == (h | 1)) {
			if (!gelf_getsym(symbols, (int)index, &sym))
				return -1;
			name = elf_strptr(elf, dynsym->sh_link, sym.st_name);
			if (name && !strcmp(name, w->name) && wanted(w, &sym, index))
				return 1;
		}
		if (chain & 1)
			return 0; /* the chain's last entry */
	}
	return -1;
}

size_t elf_dynsym_lookup(Elf *elf, struct elf_dynsym_want *want, size_t n, size_t max_entries)
{
	Elf_Data *symbols, *hash;
	GElf_Shdr sh;
	Elf_Scn *scn;
	size_t count, found = 0;

	clear(want, n);
	if (!dynsym_of(elf, max_entries, &scn, &sh, &symbols, &count))
		return 0;
	hash = gnu_hash_of(elf, elf_ndxscn(scn));
	if (!hash || !hash->d_buf || hash->d_size < sizeof(struct gnu_hash_header))
		return scan(elf, &sh, symbols, count, want, n);
	for (size_t k = 0; k < n; k++) {
		int r = hash_find(elf, &sh, symbols, count, hash->d_buf, hash->d_size, &want[k]);

		if (r < 0) {
			/* The table does not hold together: the scan answers for every name. */
			clear(want, n);
			return scan(elf, &sh, symbols, count, want, n);
		}
		found += (size_t)r;
	}
	return found;
}
