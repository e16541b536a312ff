/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon/process/: who a sample belongs to. The process table, cgroups and their ids, Kubernetes pods,
 * the host's view from a container, and the metadata written into a profile's processes. May include
 * profile/ (metadata describes a profile's process), the top-level helpers and the symbolizer.
 */
/*
 * The processes otelprofd has seen, keyed by (pid, start time) so that a reused pid never mixes two
 * processes, and each program a process exec'd by an instance number, so that samples taken
 * before an exec keep the old program's executable and attributes. An entry is filled from /proc
 * when the process is first seen (exec record, or first sample of a process that existed before
 * otelprofd started), inherited from the parent at fork, and kept after the process exits until
 * process_table_sweep() runs after its last samples were built: a process that lived 100 ms is
 * still described.
 *
 * Each entry keeps the kernel's exec count of its program (exec_id, in every record). A record lost
 * to a full ring buffer must never leave a sample described as another program: a fork inherits
 * only from a parent entry of the same exec count (else the child's first sample reads /proc), and a
 * sample whose exec count differs from its entry's ran a program whose exec record was lost: the
 * caller makes it a new instance with process_table_exec_unrecorded(), which reads /proc or, when
 * the process is gone, describes it by its name and cgroup only (counted), never by the old program.
 *
 * Bounded: when full, the least recently seen entry is evicted (counted). The table owns every
 * entry and string; a struct process_info pointer stays valid until the next call that adds,
 * sweeps or frees (process_table_exec/fork/sample/sweep/free).
 */
#ifndef OTELPROFD_PROCESS_TABLE_H
#define OTELPROFD_PROCESS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/cgroup.h"

#define PROCESS_TABLE_DEFAULT_MAX 16384

struct process_info {
	uint32_t pid;
	uint64_t start_ns;     /* process start, CLOCK_BOOTTIME ns (the BPF records' start_ns) */
	uint64_t instance;     /* never 0, unique in the table's life: one per process and per program
				  it exec'd. Samples carry it to the profile so that they are symbolized
				  with this instance's mappings and described with its attributes */
	char comm[16];         /* process name */
	char *exe_path;        /* executable path as /proc/PID/exe reads (or as given to execve), or NULL */
	char *command_line;    /* arguments joined by spaces; NULL unless the table was asked to keep it */
	char *service_name;    /* the process's own OTEL_SERVICE_NAME (or service.name in its
				  OTEL_RESOURCE_ATTRIBUTES), or NULL */
	struct cgroup_info cgroup;
	uint64_t cgroup_id;    /* cgroup v2 id that cgroup was read or resolved for (0: unknown) */
	uint32_t exec_id;      /* the process's exec count for this program (the records' exec_id) */
	uint64_t samples;      /* samples seen since it was first seen or exec'd */
	bool from_proc;        /* exe, cgroup and environment were read from /proc (else inherited or unknown) */
	bool exited;           /* its exit record arrived, or it exec'd (a newer instance took over):
				  dropped at the next sweep */
};

struct process_table_config {
	size_t max_processes;  /* 0: PROCESS_TABLE_DEFAULT_MAX */
	bool command_line;     /* keep process.command_line (it can hold secrets) */
	const char *proc_root; /* NULL: "/proc" (tests point it elsewhere) */
	const char *cgroup_root; /* cgroup v2 mount, to resolve the records' cgroup ids; NULL: found at
				    startup (tests point it elsewhere) */
	void (*evicted)(void *ctx, uint32_t pid, uint64_t instance); /* called for each entry evicted
				    when the table is full (to free the symbolizer's maps), or NULL */
	void *evicted_ctx;
};

struct process_table_counters {
	uint64_t added;            /* entries created */
	uint64_t sampled;          /* entries (a process, or the program it exec'd) given their first sample */
	uint64_t evicted;          /* entries dropped because the table was full */
	uint64_t removed;          /* exited entries dropped by a sweep */
	uint64_t no_process;       /* samples whose process was in no record and no longer in /proc */
	uint64_t proc_read_failed; /* /proc reads that failed (gone, pid reused, permissions) */
	uint64_t execs, forks, exits; /* process records handled */
	uint64_t cgroup_resolved;  /* cgroups found by the record's cgroup id (/proc gone, or the
				      process moved since it was read) */
	uint64_t cgroup_unresolved; /* ids that named no cgroup any more: the inherited cgroup dropped */
	uint64_t exec_unrecorded;  /* programs a sample showed exec'd before their exec record was read
				      (lost, or the sample was taken during the execve): new instances */
	uint64_t exec_record_late; /* of those, whose exec record came after all: the same instance */
	uint64_t exec_unrecorded_unknown; /* of those, the ones not described yet (no record, /proc not
				      read yet or gone): by name and cgroup only */
	uint64_t fork_uninherited; /* forks not given their parent's description: the parent entry is
				      of another program (its exec record lost) or unknown; the child's
				      first sample reads /proc */
};

/* The instance of samples whose process was found in no record and no longer in /proc: never
 * symbolized with whatever the pid runs now. */
#define PROCESS_INSTANCE_UNKNOWN UINT64_MAX

struct process_table;

struct process_table *process_table_new(const struct process_table_config *config);
void process_table_free(struct process_table *t);

/*
 * Record kinds, in the order the BPF programs send them. 0 or -ENOMEM. cgroup_id is the record's
 * (0: unknown): when it is not the cgroup the entry inherited and /proc cannot say (the process
 * is gone), the cgroup is found by its id. exec_id is the record's.
 */
int process_table_exec(struct process_table *t, uint32_t pid, uint64_t start_ns, const char *comm,
		       const char *filename, uint64_t cgroup_id, uint32_t exec_id);
int process_table_fork(struct process_table *t, uint32_t pid, uint64_t start_ns, uint32_t parent_pid,
		       uint64_t parent_start_ns, const char *comm, uint64_t cgroup_id, uint32_t exec_id);
/*
 * A sample of (pid, start_ns) carries exec_id, not its current entry's: a new instance, as
 * process_table_exec() without a file name (counted in exec_unrecorded). An exec record of the same
 * exec_id that follows (the sample was taken during the execve) completes that instance instead of
 * making another. maybe_in_execve (the sample hit kernel code): /proc is read at the instance's next
 * sample unless its record comes first (before the execve ends it shows no environment). 0 or -ENOMEM.
 */
int process_table_exec_unrecorded(struct process_table *t, uint32_t pid, uint64_t start_ns, const char *comm,
				  uint64_t cgroup_id, uint32_t exec_id, bool maybe_in_execve);
void process_table_exit(struct process_table *t, uint32_t pid, uint64_t start_ns);

/*
 * The entry of a sampled process, created (and read from /proc) on first sight, with the sample's
 * exec_id. NULL when the process is in no record and no longer in /proc (counted in no_process), or
 * on allocation failure. The caller checks exec_id against process_table_find() first.
 */
const struct process_info *process_table_sample(struct process_table *t, uint32_t pid, uint64_t start_ns,
						const char *comm, uint64_t cgroup_id, uint32_t exec_id);
/* The current entry (the program the process runs now), or NULL. */
const struct process_info *process_table_find(const struct process_table *t, uint32_t pid, uint64_t start_ns);
/* The entry of one instance (current or not yet swept), or NULL. */
const struct process_info *process_table_find_instance(const struct process_table *t, uint32_t pid,
							uint64_t start_ns, uint64_t instance);

/* Drop the exited and exec'd instances, calling forget(ctx, pid, instance) for each (to free the
 * symbolizer's maps). Once process_table_seal() was called, only those that ended before its last
 * call go: the others' samples came after the interval set aside to be built. */
void process_table_sweep(struct process_table *t, void (*forget)(void *ctx, uint32_t pid, uint64_t instance),
			 void *ctx);
/* The same for the instances that ended without a sample: nothing waits for them, so they can go at
 * any time (a long run writing one file at its end never sweeps otherwise). */
void process_table_sweep_unsampled(struct process_table *t,
				   void (*forget)(void *ctx, uint32_t pid, uint64_t instance), void *ctx);
/* The interval ends here and is built in slices while records go on: the instances ending from now
 * wait for the sweep after the next seal. */
void process_table_seal(struct process_table *t);

size_t process_table_count(const struct process_table *t);
const struct process_table_counters *process_table_counters(const struct process_table *t);

/* Start of pid in CLOCK_BOOTTIME ns at clock-tick precision, from proc_root/PID/stat. 0 or -errno. */
int process_start_ns(const char *proc_root, uint32_t pid, uint64_t *start_ns);
/* start_ns (exact) and a start time read from /proc (tick precision) name the same instant. */
bool process_same_start(uint64_t start_ns, uint64_t proc_start_ns);

#endif
