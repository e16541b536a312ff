/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One module open (elf_module_open(): libdw reading, perhaps inflating, a file's symbols and
 * DWARF, then building the indexes its first lookups would otherwise build in the caller's thread)
 * at a time in a thread of its own, so that a caller with a deadline waits for it no longer
 * than that and takes the module at a later lookup: no open, however large its file, holds the
 * caller's loop past its deadline. The job touches nothing but its own elf_module, its fds and the
 * options it was given (libelf and libdw keep no shared state between separate handles; debuginfod
 * lookups take their own lock), and the module is the thread's alone until module_opener_take()
 * hands it over (after the job's end, under the opener's lock): libdw objects are never used by
 * two threads at once.
 */
#ifndef OTELPROF_MODULE_OPENER_H
#define OTELPROF_MODULE_OPENER_H

#include <stdbool.h>
#include <stdint.h>

#include "elf_module.h"

struct module_opener;

/* NULL when out of memory. delay_ms: each open starts this much later (tests: a file slow to open,
 * on purpose); 0 for none. */
struct module_opener *module_opener_new(uint64_t delay_ms);
/* Waits for a job still running, and frees its module. NULL is fine. */
void module_opener_free(struct module_opener *o);
/* The same without the wait: a job still running is left to its thread (detached), which frees
 * the opener and what it opened when its open ends; the job's options (debug_dirs, debuginfod)
 * must then outlive it. True when one was left so. NULL is fine. */
bool module_opener_abandon(struct module_opener *o);
/* A job is started and its module not taken yet. */
bool module_opener_busy(const struct module_opener *o);
/*
 * Open the ELF file fd with options in the thread; both fds are the job's (fd consumed as by
 * elf_module_open(), options->root_fd closed after the open); options->path is copied, the rest
 * (debug_dirs, debuginfod) must outlive the job. 0, -EBUSY (a job is not taken yet: nothing
 * consumed), or -errno (the thread could not start: nothing consumed, open it in place).
 */
int module_opener_start(struct module_opener *o, int fd, const struct elf_module_options *options);
/* Wait for the job until deadline_ns (CLOCK_MONOTONIC; 0: as long as it takes): true when it is
 * done (or none was started). */
bool module_opener_wait(struct module_opener *o, uint64_t deadline_ns);
/* The module the done job opened (the caller frees it), or NULL with *err its errno; the opener
 * is free for the next job. Only after module_opener_wait() said done. */
struct elf_module *module_opener_take(struct module_opener *o, int *err);

#endif
