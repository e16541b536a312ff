/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --alloc: the files whose otel_memory probes the allocation programs attach to. A file is attached
 * once, for every process that maps it now or later (uprobes live on the file), so a process whose
 * sampler library was attached before it started loses none of its first allocations, and processes
 * without such a file cost nothing. Files come from two places: the paths given (the installed
 * libotelprofd-alloc.so), attached at start, and the executable mappings of the processes running,
 * read once per process (a new pid, process or executable) every ALLOC_PROBES_SCAN_MS: a copy of
 * the library inside a container, or another library firing the same probes. A scan looks at the
 * processes the daemon profiles only: the --pid list, or the --cgroup's processes (cgroup.procs, its
 * descendants' too), else every process of /proc (its readdir() alone was a sixth of the daemon's CPU
 * beside an allocating program in a cgroup, with a few hundred processes on the machine).
 *
 * Bounded: ALLOC_PROBES_MAX_FILES files remembered (probes or not), ALLOC_PROBES_MAX_PROCESSES
 * processes per scan; what does not fit is counted and not looked at. The object owns its tables.
 */
#ifndef OTELPROFD_ALLOC_PROBES_H
#define OTELPROFD_ALLOC_PROBES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ALLOC_PROBES_PROVIDER "otel_memory"
#define ALLOC_PROBES_SCAN_MS 1000
#define ALLOC_PROBES_MAX_FILES 4096
#define ALLOC_PROBES_MAX_PROCESSES 65536
#define ALLOC_PROBES_CGROUP_DEPTH 16 /* levels of a --cgroup's descendants looked at */

/* Attach the probes of the file at path: 0 or -errno (sampler_attach_alloc()). */
typedef int (*alloc_probes_attach_fn)(void *ctx, const char *path);

struct alloc_probes_config {
	const char *proc_root;         /* "/proc" when NULL */
	alloc_probes_attach_fn attach;
	void *attach_ctx;
	const pid_t *pids;             /* scan only these (--pid; NULL: every process) */
	size_t npids;
	const char *cgroup_dir;        /* else this cgroup v2 directory's processes (--cgroup; copied); NULL: all */
};

struct alloc_probes_counters {
	uint64_t scans;          /* scans of the processes */
	uint64_t processes_read; /* processes whose mappings were read */
	uint64_t files_checked;  /* files whose notes were read */
	uint64_t files_attached; /* files with otel_memory probes, attached */
	uint64_t attach_failed;  /* files with the probes that could not be attached */
	uint64_t files_full;     /* files not looked at: ALLOC_PROBES_MAX_FILES were remembered */
	uint64_t processes_full; /* processes not looked at: ALLOC_PROBES_MAX_PROCESSES in a scan */
};

struct alloc_probes;

/* NULL when out of memory. */
struct alloc_probes *alloc_probes_new(const struct alloc_probes_config *cfg);
void alloc_probes_free(struct alloc_probes *ap);

/* Attach the probes of a file known beforehand. 0, -ENOENT (no such file, or no probes), or -errno. */
int alloc_probes_add_file(struct alloc_probes *ap, const char *path);
/* Look at the processes not seen yet, if ALLOC_PROBES_SCAN_MS passed since the last scan (now:
 * CLOCK_MONOTONIC ns; 0 forces a scan). */
void alloc_probes_scan(struct alloc_probes *ap, uint64_t now);

const struct alloc_probes_counters *alloc_probes_counters(const struct alloc_probes *ap);

#endif
