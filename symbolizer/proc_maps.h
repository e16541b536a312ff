/* SPDX-License-Identifier: Apache-2.0 */
/* Parsing of /proc/PID/maps lines. */
#ifndef OTELPROF_PROC_MAPS_H
#define OTELPROF_PROC_MAPS_H

#include <stdbool.h>
#include <stdint.h>

struct proc_map {
	uint64_t start, end;  /* [start, end) */
	uint64_t offset;      /* file offset mapped at start */
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	bool executable;      /* 'x' permission */
	const char *path;     /* points into the parsed line; "" for anonymous mappings */
	bool deleted;         /* the path ended with " (deleted)", which was stripped */
};

/* Parse one line (modified in place: the path is NUL-terminated). true when it is well formed. */
bool proc_map_parse_line(char *line, struct proc_map *map);

#endif
