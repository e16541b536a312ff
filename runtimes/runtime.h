/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtimes/: one folder per language runtime (python, go, jvm), each a room holding its BPF part,
 * its process check and its symbolization (runtimes/README.md). This header is the one small
 * interface the record path (daemon/sampling/record_path.c) calls them through: every room is a
 * struct runtime_ops in the table of runtimes.c, which the record path walks at each step of a
 * record's way, so a new runtime is one new folder and one line of that table.
 *
 * A room may include bpf/records.h, the symbolizer, daemon/process/ (the process table's entries)
 * and the sampler's publish callbacks; nothing includes a room's files but the room itself, the
 * sampler (its BPF part's loader) and this interface's table.
 *
 * Ownership: open() makes the room's state (NULL: the room is off for this daemon), which the
 * record path owns and frees with close(). What a room borrows from runtime_env outlives it.
 */
#ifndef OTELPROFD_RUNTIME_H
#define OTELPROFD_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "go_labels.h"
#include "go_process.h"
#include "python_sample.h"
#include "python_table.h"
#include "records.h"

struct jvm_attacher;
struct process_info;
struct symbolizer;

/* What the daemon hands every room when the record path is made (the fields a room does not use
 * are ignored; a room whose hook is NULL stays off). */
struct runtime_env {
	struct symbolizer *sym;                 /* borrowed: frames, instances */
	/* Python: how an interpreter's entry reaches the BPF map (the sampler; loads the walk first). */
	python_publish_fn python_publish;
	void *python_publish_ctx;
	struct python_sample_counters *python;  /* the record path's: Python frames put in stacks */
	/* Go: how a Go process's entry reaches the BPF map (the sampler; loads the label reader first). */
	go_publish_fn go_publish;
	void *go_publish_ctx;
	struct go_process_counters *go_processes; /* the record path's: Go processes found */
	struct go_labels_counters *go_labels;     /* the record path's: labels put on samples */
	/* JVM: the attach thread, set after the record path is made (record_path_set_jvm()), so
	 * borrowed through the record path's pointer; *jvm NULL: JVMs are not asked. */
	struct jvm_attacher *const *jvm;
};

/* A record on the record path, as the rooms see it. */
struct runtime_sample {
	const struct otelprof_sample *s; /* the record as read (an on-CPU sample, a switch-out, an allocation) */
	const void *data;                /* the whole record, its tails included */
	size_t size;
	const struct process_info *pi;   /* its process in the process table, or NULL */
	uint64_t instance;               /* pi's instance (PROCESS_INSTANCE_UNKNOWN without pi) */
	bool on_cpu;                     /* an on-CPU sample (not a switch-out or an allocation) */
};

/* A room: every hook but open may be NULL (the room has no such step). */
struct runtime_ops {
	const char *name; /* "python", "jvm", "go" */
	/* The room's state into *room (NULL: the room is off for this daemon). 0 or -ENOMEM. */
	int (*open)(const struct runtime_env *env, void **room);
	void (*close)(void *room);
	/*
	 * The process check, at every record of a process, first thing: the room chooses at which of
	 * a process's records it looks (pi->samples), whether the process is one of its runtime's, and
	 * publishes what its BPF part reads for it (the sampler then loads that part at its first
	 * process: daemon/sampling/runtime_bpf.h) or hands it to its thread.
	 */
	void (*check)(void *room, const struct runtime_sample *rs);
	/* pid exec'd or exited: what the room keeps for its older program goes (its samples already
	 * taken keep what they need). */
	void (*retire)(void *room, uint32_t pid);
	/* The samples of (pid, instance) are built: drop what the room keeps for them. */
	void (*forget)(void *room, uint32_t pid, uint64_t instance);
	/* The sample's attributes, appended to its link (the aggregate's AGG_LINK format, len bytes of
	 * cap so far): the link's new length. */
	size_t (*attributes)(void *room, const struct runtime_sample *rs, uint8_t *link, size_t len, size_t cap);
	/* The sample's frames of this runtime put in its unwound stack: unwound itself, or a copy the
	 * room owns until its next call. */
	const struct otelprof_sample *(*frames)(void *room, const struct runtime_sample *rs,
						const struct otelprof_sample *unwound);
};

/* For a room's open(): *room a zeroed block of size bytes when wanted (the room's runtime is asked
 * for), else NULL. 0, or -ENOMEM (*room NULL). The room frees it in close(). */
int runtime_room_alloc(bool wanted, size_t size, void **room);

/* The rooms, in the order the record path calls them (runtimes.c). */
extern const struct runtime_ops *const runtime_rooms[];
extern const size_t runtime_room_count;

/* The rooms of runtimes.c's table (python_room.c, jvm_room.c, go_room.c). */
extern const struct runtime_ops python_runtime;
extern const struct runtime_ops jvm_runtime;
extern const struct runtime_ops go_runtime;

/* The Python room's table of processes' counters (room: its open()'s state), for the self-metrics. */
const struct python_table_counters *python_room_counters(const void *room);

#endif
