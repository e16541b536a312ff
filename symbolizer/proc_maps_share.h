/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fewer reads of /proc/PID/maps (the kernel formats every mapping, paths included, at each read).
 * The symbolizer reads a process's maps when its program starts and again once it settled (checking
 * each time that the process did not change meanwhile), and offers the text here; the runtimes'
 * process checks and the trace context's check, run at the process's first samples, read that text
 * instead of the file again, when it is still what the process maps: same pid and program instance,
 * as many mappings as the record says the process has (mm->map_count), and at most
 * PROC_MAPS_SHARE_TTL_NS old.
 *
 * Per thread: the record path opens a window for one record (proc_maps_share_begin: its pid,
 * instance and map count), readers open the maps as a FILE (proc_maps_fopen), and the window ends
 * with the record. Outside a window, or when no text fits, a reader reads the file.
 */
#ifndef OTELPROF_PROC_MAPS_SHARE_H
#define OTELPROF_PROC_MAPS_SHARE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Texts kept (the most recent offers), the largest kept (larger maps, a JVM's, are read again by
 * each reader: counted in too_big), and how long one serves. At most 8 x 128 KiB. */
#define PROC_MAPS_SHARE_SLOTS 8
#define PROC_MAPS_SHARE_MAX_BYTES (128u << 10)
#define PROC_MAPS_SHARE_TTL_NS 1000000000ull

struct proc_maps_share_counters {
	uint64_t offered;    /* texts kept */
	uint64_t too_big;    /* not kept: over PROC_MAPS_SHARE_MAX_BYTES (or no memory) */
	uint64_t reused;     /* reads served by a kept text instead of the file */
	uint64_t file_reads; /* reads of the file by proc_maps_fopen() */
};

/* Keep a copy of the maps text (len bytes) of pid's program instance (0: none, nothing kept). */
void proc_maps_share_offer(pid_t pid, uint64_t instance, const char *text, size_t len);
/* A record of pid's program instance, whose process had map_count mappings (low 16 bits; 0:
 * unknown, then no text is used), is being handled: its readers may use a kept text. */
void proc_maps_share_begin(pid_t pid, uint64_t instance, uint32_t map_count);
void proc_maps_share_end(void);
/* Free every text kept by this thread. */
void proc_maps_share_free(void);

/* pid's maps as a FILE to read (the caller fcloses it): the window's text when it is pid's and
 * proc_root is the host's (NULL or "/proc"), else proc_root/PID/maps opened. NULL and errno set
 * when the file cannot be opened. */
FILE *proc_maps_fopen(const char *proc_root, uint32_t pid);

/* This thread's counts. */
const struct proc_maps_share_counters *proc_maps_share_counters(void);

#endif
