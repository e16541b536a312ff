/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPython processes being sampled (docs/python.md): which interpreter each one runs
 * (python_process.h), handed to the BPF program through a callback (the sampler's per-process map)
 * so that their samples carry their Python frames, and kept for the record path, which puts those
 * frames in place of the interpreter's native ones.
 *
 * A process is looked at on its 1st, 8th, 64th and 512th sample (an interpreter in a library loaded
 * late is found too; other processes cost nothing more). A version this reader does not know is
 * said once per process (a log line) and counted; its samples keep native frames only.
 *
 * Bounded by max_processes (at most OTELPROF_MAX_TRACE_PROCS): a Python process beyond is left with
 * native frames, counted. The table owns its entries; pointers it returns stay valid until the next
 * call that adds or forgets one.
 */
#ifndef OTELPROFD_PYTHON_TABLE_H
#define OTELPROFD_PYTHON_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python_process.h"
#include "records.h"

struct python_entry {
	uint32_t pid;
	uint64_t start_ns, instance;
	struct python_process proc;
	bool supported;  /* proc.layout is usable; false: a version this reader does not know */
	bool retired;    /* exec'd or exited: out of the BPF map */
	bool published;  /* in the BPF map */
};

struct python_table_counters {
	uint64_t found;        /* Python processes whose frames are read */
	uint64_t unsupported;  /* Python processes of a version this reader does not know */
	uint64_t debug_offsets; /* of the found, those whose layout came from _Py_DebugOffsets */
	uint64_t checks;       /* processes looked at */
	uint64_t table_full;   /* Python processes left out: the table was full */
	uint64_t map_failed;   /* entries the BPF map refused */
};

/* Set (entry) or clear (NULL) pid's Python part in the BPF program's map. 0 or -errno. */
typedef int (*python_publish_fn)(void *ctx, uint32_t pid, uint64_t start_ns, const struct otelprof_python_proc *entry);
/* Find the interpreter of pid's program instance, as python_process_find(). */
typedef int (*python_find_fn)(void *ctx, const char *proc_root, uint32_t pid, uint64_t instance,
			      struct python_process *out);

struct python_table_config {
	const char *proc_root;     /* NULL: "/proc" */
	size_t max_processes;      /* 0 or over OTELPROF_MAX_TRACE_PROCS: OTELPROF_MAX_TRACE_PROCS */
	python_publish_fn publish; /* may be NULL (tests) */
	void *publish_ctx;
	python_find_fn find;       /* NULL: python_process_find() (tests give their own) */
	void *find_ctx;
};

struct python_table;

/* NULL when out of memory. */
struct python_table *python_table_new(const struct python_table_config *config);
void python_table_free(struct python_table *t);

/* The nth sample (1, 2, ...) of (pid, start_ns, instance): the entry when its interpreter was found
 * just now (the caller attaches it to the symbolizer), else NULL. */
const struct python_entry *python_table_check(struct python_table *t, uint32_t pid, uint64_t start_ns,
					      uint64_t instance, uint64_t nth);
/* The supported entry of (pid, start_ns, instance), or NULL. */
const struct python_entry *python_table_find(const struct python_table *t, uint32_t pid, uint64_t start_ns,
					     uint64_t instance);
/* pid exec'd or exited: its entry leaves the BPF map (it stays for its samples). */
void python_table_retire(struct python_table *t, uint32_t pid);
/* Drop the entry of (pid, instance): its samples are built. */
void python_table_forget(struct python_table *t, uint32_t pid, uint64_t instance);

size_t python_table_count(const struct python_table *t);
const struct python_table_counters *python_table_counters(const struct python_table *t);

#endif
