// SPDX-License-Identifier: Apache-2.0
#include "go_process.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* runtime.g.m, runtime.m.curg and runtime.g.labels of each release (runtimes/README.md, measured by
 * scripts/go-runtime-offsets.py from each release's DWARF). */
static const struct {
	int minor;
	uint16_t g_m, m_curg, g_labels;
	uint8_t layout;
} layouts[] = {
	{ 19, 48, 192, 360, OTELPROF_GO_LABELS_MAP },   { 20, 48, 192, 360, OTELPROF_GO_LABELS_MAP },
	{ 21, 48, 192, 344, OTELPROF_GO_LABELS_MAP },   { 22, 48, 192, 344, OTELPROF_GO_LABELS_MAP },
	{ 23, 48, 192, 352, OTELPROF_GO_LABELS_MAP },   { 24, 48, 192, 352, OTELPROF_GO_LABELS_SLICE },
	{ 25, 48, 184, 344, OTELPROF_GO_LABELS_SLICE }, { 26, 48, 184, 352, OTELPROF_GO_LABELS_SLICE },
};

static const char buildinfo_magic[14] = "\xff Go buildinf:";

int go_process_buildinfo_minor(const uint8_t *b, size_t n)
{
	uint64_t len = 0;
	size_t at = 32;
	unsigned shift = 0;
	char version[32];
	int minor = 0, digits = 0;

	/* Go 1.18+: flag bit 2 of byte 15 says the version string is inline, from byte 32. */
	if (n < 33 || memcmp(b, buildinfo_magic, sizeof(buildinfo_magic)) || !(b[15] & 2))
		return -ENOENT;
	for (; at < n && shift < 35; at++, shift += 7) {
		len |= (uint64_t)(b[at] & 0x7f) << shift;
		if (!(b[at] & 0x80))
			break;
	}
	at++;
	if (at >= n || len < 5 || len >= sizeof(version) || len > n - at)
		return -EINVAL;
	memcpy(version, b + at, len);
	version[len] = '\0';
	if (strncmp(version, "go1.", 4))
		return -EINVAL;
	for (const char *c = version + 4; *c >= '0' && *c <= '9' && digits < 4; c++, digits++)
		minor = minor * 10 + (*c - '0');
	return digits ? minor : -EINVAL;
}

int go_process_layout(int minor, struct otelprof_go_proc *out)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == minor) {
			out->g_m = layouts[i].g_m;
			out->m_curg = layouts[i].m_curg;
			out->g_labels = layouts[i].g_labels;
			out->layout = layouts[i].layout;
			return 0;
		}
	return -ENOTSUP;
}

/* The g's offset from the thread pointer: runtime.tlsg, the executable's only TLS variable, ends its
 * PT_TLS block, which variant II places right below the thread pointer; -8 without the segment. */
static int32_t g_tls_offset(Elf *elf)
{
	size_t nph;

	if (elf_getphdrnum(elf, &nph))
		return -8;
	for (size_t i = 0; i < nph && i < 256; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_TLS) {
			uint64_t align = ph.p_align ? ph.p_align : 1, size = (ph.p_memsz + align - 1) / align * align;

			return size && size <= 4096 ? -(int32_t)size : -8;
		}
	}
	return -8;
}

/* The minor release of an ELF file's .go.buildinfo, or -ENOENT / -EINVAL. */
static int read_minor(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENOENT;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".go.buildinfo"))
			continue;
		if (sh.sh_type == SHT_NOBITS || !(d = elf_rawdata(scn, NULL)) || !d->d_buf)
			return -EINVAL;
		return go_process_buildinfo_minor(d->d_buf, d->d_size < GO_BUILDINFO_READ ? d->d_size : GO_BUILDINFO_READ);
	}
	return -ENOENT;
}

int go_process_check(uint32_t pid, uint64_t start_ns, struct otelprof_go_proc *out)
{
	char path[64];
	Elf *elf;
	GElf_Ehdr eh;
	int fd, minor;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_machine != EM_X86_64)
		minor = -ENOENT;
	else
		minor = read_minor(elf);
	memset(out, 0, sizeof(*out));
	out->start_ns = start_ns;
	if (minor >= 0)
		out->g_tls = g_tls_offset(elf);
	elf_end(elf);
	close(fd);
	if (minor < 0)
		return minor == -EINVAL ? -ENOTSUP : minor;
	return go_process_layout(minor, out);
}
