// SPDX-License-Identifier: Apache-2.0
#include "process/thread_ctx.h"

#include "process/elf_dynsym.h"
#include "process/elf_sections.h"
#include "proc_maps_share.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef R_X86_64_TLSDESC
#define R_X86_64_TLSDESC 36
#endif

/* A static TLS offset is small and negative (variant II: blocks below the thread pointer); a TLS
 * descriptor's argument for dynamic TLS is a pointer, far from it. */
#define MAX_STATIC_TLS (1ll << 32)

struct module {
	uint64_t start;       /* the file's first mapping (file offset 0) */
	uint64_t end;
	uint64_t dev, ino;
};

static int read_words(uint32_t pid, uint64_t address, uint64_t *words, size_t n)
{
	struct iovec local = { .iov_base = words, .iov_len = n * 8 };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)address, .iov_len = n * 8 };
	ssize_t got = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);

	if (got < 0)
		return -errno;
	return (size_t)got == n * 8 ? 0 : -EFAULT;
}

static bool is_tls(const GElf_Sym *sym)
{
	return GELF_ST_TYPE(sym->st_info) == STT_TLS;
}

/* The variable's .dynsym entry (index and symbol), if this file defines it as TLS. */
static bool find_symbol(Elf *elf, size_t *index, GElf_Sym *sym)
{
	struct elf_dynsym_want want = { .name = THREAD_CTX_SYMBOL, .accept = is_tls };

	if (!elf_dynsym_lookup(elf, &want, 1, THREAD_CTX_MAX_ENTRIES))
		return false;
	*index = want.index;
	*sym = want.sym;
	return true;
}

/* The PT_TLS segment, and the lowest PT_LOAD address (the load bias is start minus its page). */
static bool segments(Elf *elf, GElf_Phdr *tls, uint64_t *first_load)
{
	size_t n;
	bool have_tls = false;

	*first_load = UINT64_MAX;
	if (elf_getphdrnum(elf, &n))
		return false;
	for (size_t i = 0; i < n && i < 4096; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return false;
		if (ph.p_type == PT_TLS) {
			*tls = ph;
			have_tls = true;
		} else if (ph.p_type == PT_LOAD && ph.p_vaddr < *first_load) {
			*first_load = ph.p_vaddr;
		}
	}
	return have_tls && *first_load != UINT64_MAX;
}

/*
 * The executable's block is the first of the static TLS area: glibc puts it at
 * roundup(memsz - firstbyte, align) + firstbyte below the thread pointer, as the linker's
 * local-exec offsets assume.
 */
static int64_t executable_tp_offset(const GElf_Phdr *tls, uint64_t value)
{
	uint64_t align = tls->p_align ? tls->p_align : 1;
	uint64_t firstbyte = (0 - tls->p_vaddr) & (align - 1);
	uint64_t off = ((tls->p_memsz - firstbyte + align - 1) / align) * align + firstbyte;

	return (int64_t)value - (int64_t)off;
}

/* A library's relocations of the variable, read as the dynamic linker applied them. */
static int library_tls(Elf *elf, uint32_t pid, uint64_t bias, size_t symindex, const GElf_Sym *sym,
		       struct otelprof_trace_proc *out)
{
	Elf_Scn *scn = NULL;
	uint64_t module = 0, offset = sym->st_value;
	bool have_module = false;
	Elf_Data *data;
	GElf_Shdr sh;
	size_t n;
	int r = -ENOTSUP;

	while ((scn = elf_sections_next_table(elf, scn, SHT_RELA, THREAD_CTX_MAX_ENTRIES, &sh, &data, &n))) {
		if (!data)
			continue; /* unreadable or too large: another section may still hold the relocations */
		for (size_t i = 0; i < n; i++) {
			uint64_t words[2];
			GElf_Rela rela;

			if (!gelf_getrela(data, (int)i, &rela) || GELF_R_SYM(rela.r_info) != symindex)
				continue;
			switch (GELF_R_TYPE(rela.r_info)) {
			case R_X86_64_TPOFF64: /* initial exec: the GOT holds the offset from the thread pointer */
				if ((r = read_words(pid, bias + rela.r_offset, words, 1)))
					return r;
				*out = (struct otelprof_trace_proc){ .mode = OTELPROF_TLS_STATIC, .tp_offset = (int64_t)words[0] };
				return 0;
			case R_X86_64_TLSDESC: /* { resolver, argument } */
				if ((r = read_words(pid, bias + rela.r_offset, words, 2)))
					return r;
				if ((int64_t)words[1] <= 0 && (int64_t)words[1] > -MAX_STATIC_TLS) {
					*out = (struct otelprof_trace_proc){
						.mode = OTELPROF_TLS_STATIC, .tp_offset = (int64_t)words[1],
					};
					return 0;
				}
				/* Dynamic TLS: the argument points to { module id, offset, generation }. */
				if ((r = read_words(pid, words[1], words, 2)))
					return r;
				if (!words[0])
					return -ENOENT;
				*out = (struct otelprof_trace_proc){
					.mode = OTELPROF_TLS_DTV, .module = words[0], .offset = words[1],
				};
				return 0;
			case R_X86_64_DTPMOD64: /* legacy general dynamic: module id here, offset beside */
				if ((r = read_words(pid, bias + rela.r_offset, words, 1)))
					return r;
				module = words[0];
				have_module = true;
				break;
			case R_X86_64_DTPOFF64:
				offset = sym->st_value + (uint64_t)rela.r_addend;
				break;
			}
		}
	}
	if (!have_module)
		return r;
	if (!module)
		return -ENOENT; /* not relocated yet */
	*out = (struct otelprof_trace_proc){ .mode = OTELPROF_TLS_DTV, .module = module, .offset = offset };
	return 0;
}

/* Resolve the variable in one module, if it defines it: 0, -ENOENT (it does not), or an error. */
static int resolve_module(const char *proc_root, uint32_t pid, const struct module *m, bool executable,
			  struct otelprof_trace_proc *out)
{
	char path[128];
	GElf_Ehdr eh;
	GElf_Phdr tls = { 0 };
	GElf_Sym sym;
	uint64_t first_load;
	size_t symindex = 0;
	Elf *elf = NULL;
	int fd, r = -ENOENT;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, proc_root, pid, m->start, m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -ENOENT; /* gone, or not a file we may read: another module may still define it */
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_machine != EM_X86_64)
		goto out;
	if (!find_symbol(elf, &symindex, &sym))
		goto out;
	r = -ENOTSUP;
	if (!segments(elf, &tls, &first_load))
		goto out;
	/* A non-PIE executable is ET_EXEC (on overlayfs the maps' device is not /proc/PID/exe's). */
	if (executable || eh.e_type == ET_EXEC) {
		*out = (struct otelprof_trace_proc){
			.mode = OTELPROF_TLS_STATIC, .tp_offset = executable_tp_offset(&tls, sym.st_value),
		};
		r = 0;
	} else {
		r = library_tls(elf, pid, m->start - (first_load & ~(uint64_t)4095), symindex, &sym, out);
	}
out:
	elf_end(elf);
	close(fd);
	return r;
}

int thread_ctx_resolve(const char *proc_root, uint32_t pid, struct otelprof_trace_proc *out)
{
	struct module modules[64];
	char path[64], line[512];
	struct stat exe;
	unsigned seen = 0;
	int r = -ENOENT;
	FILE *f;

	if (!proc_root)
		proc_root = "/proc";
	elf_version(EV_CURRENT);
	snprintf(path, sizeof(path), "%s/%" PRIu32 "/exe", proc_root, pid);
	if (stat(path, &exe))
		return -errno;
	f = proc_maps_fopen(proc_root, pid); /* the symbolizer's read of this record, when it made one */
	if (!f)
		return -errno;
	/* Modules in batches: the maps file is read once, each file's first mapping opened once. */
	while (r == -ENOENT && seen < THREAD_CTX_MAX_MODULES && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, offset, ino;
		unsigned major, minor;
		struct module m;
		bool dup = false;

		if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu", &start, &end, &offset, &major, &minor, &ino) != 6 ||
		    offset || !ino || !strchr(line, '/'))
			continue;
		m = (struct module){ .start = start, .end = end, .dev = makedev(major, minor), .ino = ino };
		for (unsigned i = 0; i < seen && i < sizeof(modules) / sizeof(modules[0]); i++)
			dup |= modules[i].dev == m.dev && modules[i].ino == m.ino;
		if (dup)
			continue;
		if (seen < sizeof(modules) / sizeof(modules[0]))
			modules[seen] = m;
		seen++;
		r = resolve_module(proc_root, pid, &m, m.ino == exe.st_ino && m.dev == exe.st_dev, out);
	}
	fclose(f);
	return r;
}
