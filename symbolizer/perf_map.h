/*
 * JIT symbol files in the perf map format ("START SIZE NAME" per line, hex, as written by
 * node --perf-basic-prof and JVM perf-map agents). Owns all its memory.
 */
#ifndef OTELPROF_PERF_MAP_H
#define OTELPROF_PERF_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Most symbols kept from one file, and longest name kept (longer names are cut). */
#define PERF_MAP_MAX_SYMBOLS (1u << 20)
#define PERF_MAP_MAX_NAME 1024

struct perf_map_sym {
	uint64_t start, size;
	const char *name; /* owned by the map */
};

struct perf_map;

/* Parse a stream; malformed lines are skipped and counted. NULL with errno on allocation failure. */
struct perf_map *perf_map_parse(FILE *f);
void perf_map_free(struct perf_map *m);
/* The symbol whose [start, start + size) holds address (the latest line wins on overlap), or NULL. */
const struct perf_map_sym *perf_map_lookup(const struct perf_map *m, uint64_t address);
size_t perf_map_count(const struct perf_map *m);
size_t perf_map_malformed(const struct perf_map *m);

#endif
