/*
 * One ELF file opened for symbolization (through libdwfl), identified by device and inode.
 * elf_module_open() takes ownership of fd whatever it returns; elf_module_free() releases all.
 */
#ifndef OTELPROF_ELF_MODULE_H
#define OTELPROF_ELF_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer.h"

struct elf_module;

/* NULL with errno set (ENOEXEC for a file that is not a usable ELF). */
struct elf_module *elf_module_open(int fd, const char *name);
void elf_module_free(struct elf_module *m);

/* ELF virtual address of a file offset (through the PT_LOAD segments); false when none covers it. */
bool elf_module_offset_to_vaddr(const struct elf_module *m, uint64_t file_offset, uint64_t *vaddr);
/* Fill frame->lines for an ELF virtual address; returns how many lines were filled. */
unsigned elf_module_symbolize(struct elf_module *m, uint64_t vaddr, struct sym_frame *frame);
/* Hex GNU build id, or NULL. */
const char *elf_module_build_id(const struct elf_module *m);

#endif
