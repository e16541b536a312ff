#include "elf_module.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LOAD_SEGMENTS 16

struct load_segment {
	uint64_t offset, vaddr, filesz;
};

struct elf_module {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	struct load_segment segments[MAX_LOAD_SEGMENTS];
	size_t nsegments;
	char *build_id; /* hex, or NULL */
};

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

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

	if (n <= 0 || n > 64)
		return;
	m->build_id = malloc((size_t)n * 2 + 1);
	if (!m->build_id)
		return;
	for (int i = 0; i < n; i++)
		snprintf(m->build_id + 2 * i, 3, "%02x", bits[i]);
}

struct elf_module *elf_module_open(int fd, const char *name)
{
	struct elf_module *m = calloc(1, sizeof(*m));
	int err = ENOEXEC;

	if (!m) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	m->dwfl = dwfl_begin(&offline_callbacks);
	if (!m->dwfl) {
		close(fd);
		err = ENOMEM;
		goto fail;
	}
	dwfl_report_begin(m->dwfl);
	/* base 0 with add_p_vaddr: the module's addresses are the file's own virtual addresses. */
	m->mod = dwfl_report_elf(m->dwfl, name, name, fd, 0, true);
	if (!m->mod) {
		close(fd); /* libdwfl consumes fd only on success */
		goto fail;
	}
	dwfl_report_end(m->dwfl, NULL, NULL);
	if (read_segments(m))
		goto fail;
	read_build_id(m);
	return m;

fail:
	elf_module_free(m);
	errno = err;
	return NULL;
}

void elf_module_free(struct elf_module *m)
{
	if (!m)
		return;
	if (m->dwfl)
		dwfl_end(m->dwfl);
	free(m->build_id);
	free(m);
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

unsigned elf_module_symbolize(struct elf_module *m, uint64_t vaddr, struct sym_frame *frame)
{
	GElf_Off offset;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(m->mod, vaddr, &offset, &sym, NULL, NULL, NULL);

	frame->nlines = 0;
	if (!name)
		return 0;
	frame->lines[0] = (struct sym_line){ .function = name, .system_name = name };
	frame->nlines = 1;
	return 1;
}

const char *elf_module_build_id(const struct elf_module *m)
{
	return m->build_id;
}
