/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DWARF line program of one compile unit (.debug_line, versions 2 to 5), read directly:
 * the header and file table once, then for each address the program is run from its start
 * until the row covering the address, with no allocation per row.
 *
 * Why: libdw 0.188 builds, sorts and keeps the whole line table of a CU on the first question
 * about any of its lines or files (dwarf_getsrc_die, dwarf_getsrcfiles), ~45 ms for one CU of
 * 4000 functions; a cold stack needs a handful of rows. Anything this reader does not support
 * (segmented or VLIW programs, string forms needing .debug_str_offsets, alternate debug files)
 * makes dwarf_lines_open() fail so the caller falls back to libdw.
 *
 * Every read is bounded by the unit's length inside the section; strings are used only when
 * NUL-terminated inside their section. dwarf_lines_free() releases what dwarf_lines_open()
 * returned; the file names it writes are copies in the caller's buffer.
 */
#ifndef OTELPROF_DWARF_LINES_H
#define OTELPROF_DWARF_LINES_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most entries accepted in a file or directory table; a bigger claim is treated as malformed. */
#define DWARF_LINES_MAX_FILES 65536

struct dwarf_line_row {
	uint64_t file;   /* index in the file table (as DW_AT_call_file counts) */
	uint32_t line;   /* 0: no line */
	uint32_t column; /* 0: no column */
};

struct dwarf_lines;

/* The line program of cudie (a unit DIE of dwarf). NULL with errno set: ENOENT when the unit
 * has none, ENOTSUP or EINVAL when it cannot be read here (use libdw), ENOMEM. */
struct dwarf_lines *dwarf_lines_open(Dwarf *dwarf, Dwarf_Die *cudie);
void dwarf_lines_free(struct dwarf_lines *l);

/* The row covering pc (DWARF address): 0, -ENOENT when no sequence covers it, -EINVAL when the
 * program turned out malformed before pc was reached. */
int dwarf_lines_find(const struct dwarf_lines *l, uint64_t pc, struct dwarf_line_row *row);

/* Path of file index i (joined with its directory as libdw does) into buf; false when i is not
 * in the table or the path does not fit. */
bool dwarf_lines_file(const struct dwarf_lines *l, uint64_t i, char *buf, size_t size);

/* Bytes allocated for l. */
size_t dwarf_lines_bytes(const struct dwarf_lines *l);

#endif
