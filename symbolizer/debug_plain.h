/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Debug files kept decompressed on disk. Debian's -dbg and -dbgsym files hold their DWARF
 * compressed (SHF_COMPRESSED), and libdw inflates every .debug_* section of a file at each open:
 * libc6-dbg's 2 MiB of .debug_info and the rest, 10 MiB inflated, cost 50-60 ms of CPU per open,
 * paid again whenever the module is opened again (another run, or after the symbol cache let it
 * go). The first open writes a copy with those sections decompressed, named by the build id, into
 * a directory of the cache's own; the next opens map that copy instead (under a millisecond). The
 * copy is trusted as the kernel symbols' cache is (cache_file.h), and the caller checks its build
 * id as it does any debug file's. The directory is bounded by count and bytes: the oldest copies
 * go first.
 */
#ifndef OTELPROF_DEBUG_PLAIN_H
#define OTELPROF_DEBUG_PLAIN_H

#include <stddef.h>
#include <stdint.h>

/* A file is copied only when libdw would inflate at least this much of its DWARF. */
#define DEBUG_PLAIN_MIN_INFLATED ((size_t)1 << 20)
/* Most copies, and most bytes of copies, in the directory. */
#define DEBUG_PLAIN_MAX_FILES 64
#define DEBUG_PLAIN_MAX_BYTES ((uint64_t)1 << 30)

enum debug_plain_result {
	DEBUG_PLAIN_NONE,    /* nothing to do: no directory, or nothing worth decompressing */
	DEBUG_PLAIN_READ,    /* the copy was there */
	DEBUG_PLAIN_WRITTEN, /* the copy was made now */
	DEBUG_PLAIN_FAILED,  /* it could not be read nor made (refused, no room, a write failed) */
};

/*
 * The decompressed copy of the debug file fd (not consumed) whose build id is build_id (hex), from
 * or into dir; inflated: what libdw would inflate of its DWARF (elf_cost), nothing done under
 * min_inflated (DEBUG_PLAIN_MIN_INFLATED but in tests). Returns a new descriptor of the copy, or -1;
 * *result says what happened, *evicted counts copies removed to make room.
 */
int debug_plain_open(const char *dir, int fd, const char *build_id, size_t inflated, size_t min_inflated,
		     enum debug_plain_result *result, uint64_t *evicted);

#endif
