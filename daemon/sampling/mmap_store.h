/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the kernel said of processes' lives (sampling/mmap_events.h): each pid's forks, execs, exits
 * and executable mappings, with their times, so that a process that exited before the daemon read
 * its /proc/PID/maps (a loop lagging behind its ring buffer, a program living 0.2 s) still has its
 * mappings: those of the instance that started at its start time, in the program it ran at the
 * sample's time. Pure bookkeeping: no I/O, no clock (callers pass times), never prints.
 *
 * Times are CLOCK_MONOTONIC ns. Events are kept in time order per pid whatever order they are added
 * in (each CPU's ring is read apart). An instance is found only by its fork event (within
 * MMAP_STORE_FORK_SLACK_NS after its start time): a process that started before the events were
 * read, or whose fork was dropped, has none, and a reused pid's newer process never answers for an
 * older one. An instance alive while events were lost (mmap_store_lost()) answers nothing: its
 * history may miss an exec or a mapping.
 *
 * Bounded: MMAP_STORE_PIDS pids (the one whose last event is oldest goes, exited ones first),
 * MMAP_STORE_PER_PID events per pid (the oldest go), MMAP_STORE_PATH_BYTES of paths in all; every
 * drop counted. A pid's history goes MMAP_STORE_KEEP_NS after its exit (mmap_store_expire()).
 */
#ifndef OTELPROFD_MMAP_STORE_H
#define OTELPROFD_MMAP_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MMAP_STORE_PIDS 4096
#define MMAP_STORE_PER_PID 128
#define MMAP_STORE_PATH_BYTES (4u << 20)
#define MMAP_STORE_BUCKETS 1024
/* A pid's history is kept this long after its process exited: its samples are handled by then. */
#define MMAP_STORE_KEEP_NS (60ULL * 1000000000ULL)
/* A fork event comes this close after the process's start time (both taken in copy_process()). */
#define MMAP_STORE_FORK_SLACK_NS (200ULL * 1000000ULL)

/* A mapping as the kernel reported it (PERF_RECORD_MMAP2). */
struct mmap_store_map {
	uint64_t start, len, pgoff;
	uint32_t maj, min;     /* the file's device */
	uint64_t ino;          /* the file's inode */
	const char *path;      /* as seen from the process's root; the store's, valid until its next change */
};

struct mmap_store_counters {
	uint64_t events;        /* forks, execs, exits and mappings added */
	uint64_t pids_dropped;  /* pids' histories dropped to make room (MMAP_STORE_PIDS) */
	uint64_t events_dropped; /* events dropped: a pid's oldest (MMAP_STORE_PER_PID), or no memory */
	uint64_t paths_dropped; /* mappings not kept: MMAP_STORE_PATH_BYTES of paths held */
	uint64_t expired;       /* pids' histories let go MMAP_STORE_KEEP_NS after their exit */
	uint64_t found;         /* lookups answered with mappings */
	uint64_t whole;         /* ... of which with the program's whole history (*whole) */
	uint64_t not_found;     /* lookups with no instance (no fork event at its start time) */
	uint64_t untrusted;     /* lookups refused: events were lost during the instance's life */
	uint64_t pids;          /* pids with a history now */
	uint64_t path_bytes;    /* bytes of paths held now */
};

struct mmap_store;

/* NULL on failure; mmap_store_free() frees (NULL allowed). */
struct mmap_store *mmap_store_new(void);
void mmap_store_free(struct mmap_store *st);

/* pid forked from parent at time (a process, not a thread). */
void mmap_store_fork(struct mmap_store *st, uint32_t pid, uint32_t parent, uint64_t time);
/* pid exec'd a program at time: its mappings before are not the program's. */
void mmap_store_exec(struct mmap_store *st, uint32_t pid, uint64_t time);
/* pid's process exited at time. */
void mmap_store_exit(struct mmap_store *st, uint32_t pid, uint64_t time);
/* pid mapped m (executable, file-backed) at time; m->path is copied. */
void mmap_store_map(struct mmap_store *st, uint32_t pid, const struct mmap_store_map *m, uint64_t time);
/* pid has a history (a followed process: --pid's filter). */
bool mmap_store_has(struct mmap_store *st, uint32_t pid);
/* Events were lost up to time: no instance alive then answers a lookup. */
void mmap_store_lost(struct mmap_store *st, uint64_t time);
/* The histories of processes that exited MMAP_STORE_KEEP_NS before now go. */
void mmap_store_expire(struct mmap_store *st, uint64_t now);

/*
 * The executable mappings of the instance of pid that started at start_ns (CLOCK_MONOTONIC), in the
 * program it ran at time_ns (every mapping that program made, before time_ns or after: a library
 * mapped after the first sample serves the later ones; a mapping made over another replaces it), at
 * most max in out (their paths the store's); *parent: the pid it
 * forked from. 0 (maybe *n == 0: no mapping seen since its exec), -ENOENT: no such instance known,
 * -ESTALE: events were lost in its life, -EINVAL: bad arguments. *whole (NULL: not asked), on 0:
 * MMAP_STORE_WHOLE when the answer is every executable mapping the program made so far, so
 * /proc/PID/maps need not be read (its exec was seen, and none of the pid's events since was let go
 * (bounds, memory) nor left out of out by max); MMAP_STORE_INHERITED for a forked child that has not
 * exec'd (it runs what it inherited, which no event reported); MMAP_STORE_GAP otherwise.
 */
enum mmap_store_whole { MMAP_STORE_GAP, MMAP_STORE_INHERITED, MMAP_STORE_WHOLE };
int mmap_store_lookup(struct mmap_store *st, uint32_t pid, uint64_t start_ns, uint64_t time_ns,
		      struct mmap_store_map *out, size_t max, size_t *n, uint32_t *parent,
		      enum mmap_store_whole *whole);

void mmap_store_counters(const struct mmap_store *st, struct mmap_store_counters *out);

#endif
