/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JIT symbol files in the perf map format ("START SIZE NAME" per line, hex, as written by
 * node --perf-basic-prof and JVM perf-map agents). Owns all its memory.
 */
#ifndef OTELPROF_PERF_MAP_H
#define OTELPROF_PERF_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * Bounds of one file. A map over either is refused whole (a partial map would name the code of its
 * first lines only): 64 MiB holds ~1M lines of typical JIT names (a parse's memory: names plus 24
 * bytes per symbol, ~90 MiB at most); a map is kept only within --symbol-cache (32 MiB by default).
 */
#define PERF_MAP_MAX_FILE_BYTES (64u << 20)
#define PERF_MAP_MAX_SYMBOLS (1u << 20)
/* Longest name kept (longer names are cut). */
#define PERF_MAP_MAX_NAME 1024

struct perf_map_sym {
	uint64_t start, size;
	const char *name; /* owned by the map */
};

struct perf_map;

/* Parse a stream; malformed lines are skipped and counted. NULL with errno: EFBIG when the stream
 * holds more than max_bytes or more than PERF_MAP_MAX_SYMBOLS symbols (nothing more is read),
 * ENOMEM. */
struct perf_map *perf_map_parse(FILE *f, uint64_t max_bytes);
void perf_map_free(struct perf_map *m);
/* The symbol whose [start, start + size) holds address (the latest line wins on overlap), or NULL. */
const struct perf_map_sym *perf_map_lookup(const struct perf_map *m, uint64_t address);
size_t perf_map_count(const struct perf_map *m);
size_t perf_map_malformed(const struct perf_map *m);
/* Bytes the map holds: its symbols and names. */
size_t perf_map_bytes(const struct perf_map *m);

/*
 * Open a process's perf map (path, e.g. "/tmp/perf-NSPID.map", resolved inside root_fd, the
 * process's root) trusting nothing its writers control: /tmp is everyone's, so no symbolic link in
 * any component, a regular file (opened non-blocking: a FIFO cannot hang the caller), of at most
 * PERF_MAP_MAX_FILE_BYTES, owned by uid (the process's effective uid, which the JIT creates it as)
 * or by root with a single link (a hard link someone else made to a root file has two).
 * fd with *st filled, or -ENOENT (none), -ELOOP (a symbolic link on the way), -EINVAL (not a regular
 * file), -EPERM (another owner), -EFBIG (too big) or another -errno.
 */
int perf_map_open(int root_fd, const char *path, uid_t uid, struct stat *st);

#endif
