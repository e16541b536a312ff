/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel's symbols kept on disk for the next read of the same boot: reading /proc/kallsyms has
 * the kernel format 120,000 lines (25 ms of CPU here) and the parse and sort follow; a table saved by
 * an earlier run of this boot is read back in a few large reads. Its key is what makes the saved
 * addresses the kernel's now: the boot (KASLR moves them each boot), the kernel's build id, the
 * loaded modules (/proc/modules, with their addresses) and the first bytes of kallsyms as the
 * reader sees them now (hidden addresses, kptr_restrict, never match a saved table). Only code
 * that never moves while those hold is saved: the kernel's text and modules with a known range;
 * BPF programs and ftrace trampolines come and go, so a table read back is partial and a lookup
 * it cannot answer asks for a full read (kallsyms_partial()).
 *
 * The file holds kernel addresses: it is written 0600 and only read when owned by the reader's
 * effective user, not a symbolic link, mode without group or other bits, in a directory that only
 * that user or root can write; its size, counts, offsets, order and checksum are all checked.
 */
#ifndef OTELPROF_KALLSYMS_CACHE_H
#define OTELPROF_KALLSYMS_CACHE_H

#include <stdint.h>

#include "kallsyms.h"

#define KALLSYMS_CACHE_HEAD 256 /* bytes of kallsyms compared */

/* What a saved table must have been saved under to be used. Zeroed before it is filled: it is
 * compared and stored byte for byte. */
struct kallsyms_cache_key {
	char boot_id[40];              /* /proc/sys/kernel/random/boot_id */
	unsigned char build_id[64];    /* the kernel's, from /sys/kernel/notes; build_id_len 0: none */
	uint32_t build_id_len;
	uint32_t head_len;             /* bytes of head */
	uint64_t modules_hash;         /* of /proc/modules (the caller's hash) */
	char head[KALLSYMS_CACHE_HEAD]; /* the first bytes of kallsyms_path */
};

/*
 * Fill key for kallsyms_path (its first bytes) and modules_hash. The boot id and build id files are
 * boot_id_path and notes_path (NULL: the kernel's own). 0, or -errno when the boot id or kallsyms
 * cannot be read (then no cache is used).
 */
int kallsyms_cache_key_read(struct kallsyms_cache_key *key, const char *kallsyms_path, uint64_t modules_hash,
			    const char *boot_id_path, const char *notes_path);

/*
 * The table saved at path under key, marked partial; the caller frees it. NULL with errno: ENOENT
 * no file, ESTALE saved under another key, EPERM refused (owner, mode, link, directory), EBADMSG
 * malformed or corrupt, ENOMEM.
 */
struct kallsyms *kallsyms_cache_read(const char *path, const struct kallsyms_cache_key *key);

/*
 * Make cached (read from the cache under the key of full's read) answer as full does: full's
 * symbols that the cache leaves out (BPF programs, trampolines, modules without a range: a few
 * hundred) are copied to a small table of cached's own on the heap, and cached is no longer
 * partial. The lasting symbols' 5 MiB stay in the file, read at each lookup, rather than on the heap.
 * 0; -ESTALE when cached does not hold full's lasting symbols (then unchanged), -EINVAL for a
 * hidden or partial full, -ENOMEM. full stays the caller's.
 */
int kallsyms_cache_join(struct kallsyms *cached, const struct kallsyms *full);

/* Save the lasting part of k at path (through a new file renamed over it, mode 0600; the directory
 * is made 0700 when missing). Never a hidden or partial table. 0, or -errno. */
int kallsyms_cache_write(const char *path, const struct kallsyms *k, const struct kallsyms_cache_key *key);

#endif
