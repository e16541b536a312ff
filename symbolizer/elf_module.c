// SPDX-License-Identifier: Apache-2.0
/* One ELF file as a module: its bounds, opening and freeing it, and what it says of itself. */
#include "elf_module_internal.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "htlhash.h"

/* ---- bounds on what libelf/libdw will read ---- */

/* A regular, sane ELF file: its size, and what it costs once libdw has inflated its sections. */
int elf_module__file_cost(int fd, size_t *size, struct elf_cost *cost)
{
	struct stat st;
	Elf *elf;
	int r;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	*cost = (struct elf_cost){ 0 };
	r = elf_cost_of(elf, cost);
	elf_end(elf);
	*size = (size_t)st.st_size;
	return r;
}

void elf_module__refused(struct elf_module *m, size_t bytes)
{
	size_t total = elf_cost_add(elf_module_bytes(m), bytes, 0);

	m->counters.inflate_refused++;
	if (total > m->counters.refused_bytes)
		m->counters.refused_bytes = total;
}

/* Whether bytes more keep the module within its bound. */
bool elf_module__affords(const struct elf_module *m, size_t bytes)
{
	return elf_cost_add(elf_module_bytes(m), bytes, 0) <= m->max_bytes;
}

/*
 * Decide, before libdw inflates anything, what of the binary the bound allows: all of it, its
 * symbol table without the DWARF, or neither (offsets still map to addresses, and the build id
 * still names the file for a backend to symbolize).
 */
static void admit_binary(struct elf_module *m, size_t size, const struct elf_cost *cost, bool symbols_only)
{
	m->file_bytes += size;
	m->cfi_bytes_max += cost->cfi / LIBDW_FDE_MIN_SIZE * LIBDW_FDE_BYTES;
	if (symbols_only && elf_module__affords(m, cost->symbols)) {
		m->no_dwarf = true; /* asked for: not a refusal of this file's claims */
		m->libdw_bytes += cost->symbols;
		return;
	}
	if (!elf_module__affords(m, cost->symbols)) {
		m->no_symbols = m->no_dwarf = true;
	} else if (!elf_module__affords(m, elf_cost_add(cost->symbols, cost->dwarf, 0))) {
		m->no_dwarf = true;
		m->libdw_bytes += cost->symbols;
	} else {
		m->libdw_bytes += cost->symbols + cost->dwarf;
		return;
	}
	elf_module__refused(m, elf_cost_add(cost->symbols, cost->dwarf, 0));
}

int elf_module_peek(int fd, struct elf_module_peek *peek)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	const void *bits;
	size_t shstrndx;
	ssize_t n;

	memset(peek, 0, sizeof(*peek));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return -ENOEXEC;
	}
	n = dwelf_elf_gnu_build_id(elf, &bits);
	if (n > 0 && (size_t)n <= sizeof(peek->build_id)) {
		memcpy(peek->build_id, bits, (size_t)n);
		peek->build_id_len = (size_t)n;
	}
	if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
		for (size_t i = 0; i < ELF_COST_MAX_SECTIONS && (scn = elf_nextscn(elf, scn)) && !peek->has_dwarf; i++) {
			GElf_Shdr shdr;
			const char *name;

			if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS || !shdr.sh_size)
				continue;
			name = elf_strptr(elf, shstrndx, shdr.sh_name);
			peek->has_dwarf = name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info"));
		}
	}
	elf_end(elf);
	return 0;
}
/* ---- open / free ---- */

static int read_segments(struct elf_module *m)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(m->mod, &bias);
	size_t phnum;

	if (!elf || elf_getphdrnum(elf, &phnum))
		return -ENOEXEC;
	for (size_t i = 0; i < phnum && m->nsegments < MAX_LOAD_SEGMENTS; i++) {
		GElf_Phdr phdr;

		if (!gelf_getphdr(elf, (int)i, &phdr) || phdr.p_type != PT_LOAD)
			continue;
		m->segments[m->nsegments++] = (struct load_segment){
			.offset = phdr.p_offset, .vaddr = phdr.p_vaddr, .filesz = phdr.p_filesz,
		};
	}
	return m->nsegments ? 0 : -ENOEXEC;
}

static void read_build_id(struct elf_module *m)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(m->mod, &bits, &vaddr);

	if (n <= 0 || (size_t)n > sizeof(m->build_id_raw))
		return;
	memcpy(m->build_id_raw, bits, (size_t)n);
	m->build_id_len = (size_t)n;
	m->build_id = malloc((size_t)n * 2 + 1);
	if (!m->build_id)
		return;
	for (int i = 0; i < n; i++)
		snprintf(m->build_id + 2 * i, 3, "%02x", bits[i]);
}

struct elf_module *elf_module_open(int fd, const struct elf_module_options *options)
{
	static const struct elf_module_options none = { .root_fd = -1 };
	struct elf_module *m = calloc(1, sizeof(*m));
	struct elf_cost cost;
	const char *name;
	void **userdata;
	struct timespec started, ended;
	size_t size;
	int err = ENOEXEC, r;

	if (!options)
		options = &none;
	if (!m) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	m->fd = -1;
	m->max_bytes = options->max_bytes ? options->max_bytes : ELF_MODULE_DEFAULT_MAX_BYTES;
	r = elf_module__file_cost(fd, &size, &cost);
	if (r) {
		close(fd);
		err = -r;
		goto fail;
	}
	admit_binary(m, size, &cost, options->symbols_only);
	m->strong_names = options->strong_names;
	m->has_htlhash = sym_htlhash_fd(fd, m->htlhash) == 0;
	m->callbacks = (Dwfl_Callbacks){
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = elf_module__find_debuginfo,
		.section_address = dwfl_offline_section_address,
	};
	m->dwfl = dwfl_begin(&m->callbacks);
	if (!m->dwfl) {
		close(fd);
		err = ENOMEM;
		goto fail;
	}
	name = options->path ? options->path : "[elf]";
	dwfl_report_begin(m->dwfl);
	/* base 0 with add_p_vaddr: the module's addresses are the file's own virtual addresses. */
	m->mod = dwfl_report_elf(m->dwfl, name, name, fd, 0, true);
	if (!m->mod) {
		close(fd); /* libdwfl consumes fd only on success */
		goto fail;
	}
	m->fd = fd; /* libdwfl's now: closed by dwfl_end() */
	dwfl_report_end(m->dwfl, NULL, NULL);
	dwfl_module_info(m->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	*userdata = m;
	if (read_segments(m))
		goto fail;
	read_build_id(m);
	elf_module__go_open(m);
	/* Load DWARF now, while the process's root is at hand for the debug file search. */
	if (!m->no_dwarf) {
		m->opening = options;
		m->dwarf = dwfl_module_getdwarf(m->mod, &m->dwarf_bias);
		m->opening = NULL;
	}
	m->nslots = options->cache_slots; /* 0: sized by the symbol count */
	/* What the first lookups would build, built here: in the opener's thread, not the caller's
	 * (after the debug file search: the symbol table is read from the files found so far). */
	clock_gettime(CLOCK_MONOTONIC, &started);
	elf_module__build_indexes(m);
	clock_gettime(CLOCK_MONOTONIC, &ended);
	m->counters.index_ns = (uint64_t)((ended.tv_sec - started.tv_sec) * 1000000000LL + ended.tv_nsec - started.tv_nsec);
	return m;

fail:
	elf_module_free(m);
	errno = err;
	return NULL;
}

static void clear_slots(struct elf_module *m)
{
	for (size_t i = 0; m->slots && i < m->nslots; i++)
		free(m->slots[i].lines);
	free(m->slots);
	m->slots = NULL;
}

void elf_module_free(struct elf_module *m)
{
	struct pool_chunk *c, *next;

	if (!m)
		return;
	clear_slots(m);
	free(m->syms);
	for (size_t i = 0; i < m->ncus; i++) {
		free(m->cus[i].ranges);
		dwarf_lines_free(m->cus[i].lines);
	}
	free(m->cus);
	free(m->cu_ranges);
	for (c = m->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(m->set);
	elf_module__frame_free(m);
	if (m->dwfl)
		dwfl_end(m->dwfl);
	free(m->build_id);
	gopclntab_free(m->go);
	free(m->go_build_id);
	free(m);
}

int elf_module_dup_fd(const struct elf_module *m, uint64_t dev, uint64_t inode)
{
	struct stat st;
	int fd;

	if (m->fd < 0)
		return -EBADF;
	fd = fcntl(m->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* libdwfl's descriptor is not ours to trust blindly: the file it names must be the module's. */
	if (fstat(fd, &st) || (uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != inode) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

bool elf_module_offset_to_vaddr(const struct elf_module *m, uint64_t file_offset, uint64_t *vaddr)
{
	for (size_t i = 0; i < m->nsegments; i++) {
		const struct load_segment *seg = &m->segments[i];

		if (file_offset >= seg->offset && file_offset - seg->offset < seg->filesz) {
			*vaddr = file_offset - seg->offset + seg->vaddr;
			return true;
		}
	}
	return false;
}

int elf_module_cfi_rule(struct elf_module *m, uint64_t vaddr, struct cfi_rule *rule)
{
	Dwarf_Addr bias;
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(m->mod, &bias);
	int r = cfi ? cfi_compile(cfi, vaddr - bias, rule) : 0;

	/* libdw keeps each CIE/FDE it parses; a lookup parses at most a few, never more than the
	 * sections hold. */
	if (m->cfi_bytes < m->cfi_bytes_max)
		m->cfi_bytes += LIBDW_FDE_BYTES;
	if (r || (cfi && rule->found))
		return r;
	/* .debug_frame: with the DWARF when it is opened, else alone (never the rest of the DWARF). */
	if (m->no_dwarf) {
		dwfl_module_getelf(m->mod, &bias);
		cfi = elf_module__frame_cfi(m);
	} else {
		cfi = dwfl_module_dwarf_cfi(m->mod, &bias);
	}
	if (!cfi) {
		rule->found = false;
		return 0;
	}
	return cfi_compile(cfi, vaddr - bias, rule);
}

const char *elf_module_build_id(const struct elf_module *m)
{
	return m->build_id;
}

size_t elf_module_build_id_raw(const struct elf_module *m, const unsigned char **bits)
{
	*bits = m->build_id_raw;
	return m->build_id_len;
}

const char *elf_module_htlhash(const struct elf_module *m)
{
	return m->has_htlhash ? m->htlhash : NULL;
}

bool elf_module_has_dwarf(const struct elf_module *m)
{
	return m->dwarf != NULL;
}

bool elf_module_debug_in_root(const struct elf_module *m)
{
	return m->debug_in_root;
}

const void *elf_module_image(const struct elf_module *m, size_t *size)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(m->mod, &bias);

	return elf ? elf_rawfile(elf, size) : NULL;
}

size_t elf_module_bytes(const struct elf_module *m)
{
	return sizeof(*m) + m->file_bytes + m->own_bytes + m->libdw_bytes + m->cfi_bytes;
}

const struct elf_module_counters *elf_module_counters(const struct elf_module *m)
{
	return &m->counters;
}
