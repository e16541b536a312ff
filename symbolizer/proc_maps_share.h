/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One read of /proc/PID/maps for all the readers of one record. The symbolizer reads a new process's
 * maps (checking that the process did not change meanwhile); the runtimes' process checks and the
 * trace context's check that follow, for the same record, read that text instead of the file again:
 * one read where there were three (the kernel formats every mapping, paths included, at each read).
 *
 * Per thread: a caller opens a window (proc_maps_share_begin), the symbolizer offers what it read
 * inside it (proc_maps_share_offer, copied), readers open it as a FILE (proc_maps_fopen), and the
 * window's end frees it. Outside a window nothing is kept, and a reader reads the file.
 */
#ifndef OTELPROF_PROC_MAPS_SHARE_H
#define OTELPROF_PROC_MAPS_SHARE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Largest text kept: larger maps (a JVM's) are read again by each reader, counted in too_big. */
#define PROC_MAPS_SHARE_MAX_BYTES (1u << 20)

struct proc_maps_share_counters {
	uint64_t offered;   /* texts kept for a window */
	uint64_t too_big;   /* not kept: over PROC_MAPS_SHARE_MAX_BYTES (or no memory) */
	uint64_t reused;    /* reads served by a kept text instead of the file */
	uint64_t file_reads; /* reads of the file by proc_maps_fopen() */
};

void proc_maps_share_begin(void);
/* Free what the window kept and close it. */
void proc_maps_share_end(void);
/* Keep a copy of pid's maps text (len bytes) for the rest of the window; nothing outside one. */
void proc_maps_share_offer(pid_t pid, const char *text, size_t len);

/* pid's maps as a FILE to read (the caller fcloses it): the window's text when it is pid's and
 * proc_root is the host's (NULL or "/proc"), else proc_root/PID/maps opened. NULL and errno set
 * when the file cannot be opened. */
FILE *proc_maps_fopen(const char *proc_root, uint32_t pid);

/* This thread's counts. */
const struct proc_maps_share_counters *proc_maps_share_counters(void);

#endif
