// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target over the symbolizer's ELF/DWARF path: the input is a file; it is opened as a
 * module (section bounds, build id, htlhash, DWARF) and symbolized at a few addresses (ELF
 * symbols, line tables, DIE scope walk, inline chains, demangling; a Go binary's .gopclntab, its
 * inline trees and top frames), and its CFI compiled into unwinding rules at the same addresses
 * (hostile .eh_frame/.debug_frame).
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf_module.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const no_dirs[] = { NULL };
	static int fd = -1;
	struct elf_module *m;
	struct sym_frame frame;
	struct cfi_rule rule;

	if (fd < 0)
		fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	/* The daemon's default --symbol-cache: a decompression bomb must be refused under it. */
	m = elf_module_open(dup(fd), &(struct elf_module_options){
		.root_fd = -1, .debug_dirs = no_dirs, .max_bytes = 128u << 20,
	});
	if (!m)
		return 0;
	/* Addresses derived from the input's own segments, plus a few fixed ones. */
	for (uint64_t off = 0; off < size; off += size / 5 + 1) {
		uint64_t vaddr;

		if (elf_module_offset_to_vaddr(m, off, &vaddr)) {
			elf_module_symbolize(m, vaddr, &frame);
			elf_module_symbolize(m, vaddr + 1, &frame);
			elf_module_go_top_frame(m, vaddr);
			elf_module_go_rule(m, vaddr, &rule);
			elf_module_cfi_rule(m, vaddr, &rule);
		}
	}
	elf_module_symbolize(m, 0x1000, &frame);
	elf_module_symbolize(m, 0x401000, &frame);
	/* Go's internal linker puts .text at 0x401000: a spread of its functions. */
	for (uint64_t pc = 0x401000; pc < 0x481000; pc += 0x1f3d) {
		elf_module_symbolize(m, pc, &frame);
		elf_module_go_top_frame(m, pc);
		elf_module_go_rule(m, pc, &rule);
	}
	elf_module_cfi_rule(m, 0x1000, &rule);
	elf_module_cfi_rule(m, 0x401000, &rule);
	elf_module_free(m);
	return 0;
}
