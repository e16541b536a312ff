/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Trace correlation state per process (OTEP 4719 process context, OTEP 4947 thread context): the
 * context each process published (resource attributes, thread-local key map) and where its threads
 * keep their context record, handed to the BPF program through a callback (the sampler's map).
 *
 * A sampled process without a context is looked at again when its samples show its number of
 * mappings changed (publishing a context maps it), at most once per TRACE_RECHECK_NS (so a context
 * published after its start is picked up within a second, and a process whose mappings stay put is
 * not read again), at most TRACE_CHECKS_PER_SECOND processes a second over all (more wait,
 * counted); a process with one is read again when a sample
 * carries a key its map does not name (at most once a second); a
 * context that says threads publish records but whose variable is not found yet (a library still to
 * be dlopen'ed) is looked for again, backing off from 1 s to 64 s. Processes without a context keep
 * no entry.
 *
 * Bounded by max_processes (at most OTELPROF_MAX_TRACE_PROCS): a process beyond is left without
 * correlation, counted. Entries are found by pid through a hash (every sample looks its process up). The table owns its entries and contexts; pointers it returns stay valid
 * until the next call that reads a context or forgets an entry.
 */
#ifndef OTELPROFD_TRACE_TABLE_H
#define OTELPROFD_TRACE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process/process_ctx.h"
#include "records.h"

/* Process context reads (a /proc/PID/maps scan each) per second, over every process. */
#define TRACE_CHECKS_PER_SECOND 64
/* A process without a context is looked at again when its mappings changed (a context is published
 * in a new mapping), at most this often: a late context is found within this plus the drain delay. */
#define TRACE_RECHECK_NS 500000000ull
/* Processes without a context whose last look is remembered (direct-mapped by pid). */
#define TRACE_PROBE_SLOTS 4096

/* Why a context or a thread context record (or a part of it) was not used. */
enum trace_reject {
	TRACE_REJECT_CONTEXT_MALFORMED, /* process context: bad signature, version, sizes or protobuf */
	TRACE_REJECT_CONTEXT_TOO_BIG,   /* process context: payload over PROCESS_CTX_MAX_PAYLOAD */
	TRACE_REJECT_CONTEXT_TORN,      /* process context: being rewritten at every try */
	TRACE_REJECT_RECORD_MALFORMED,  /* sample tail: sizes out of range, or valid is not 1 */
	TRACE_REJECT_ATTRS_OVERSIZED,   /* record claims more attrs_data than is copied: attributes
					   dropped (the last occurrence of a key may be unseen), link kept */
	TRACE_REJECT_UNKNOWN_KEY,       /* attribute whose key is not in the key map: ignored */
	TRACE_REJECT_BAD_UTF8,          /* attribute value not UTF-8: ignored */
	TRACE_REJECT_INCOMPLETE_ENTRY,  /* attrs_data ends inside an entry: parsing stopped */
	TRACE_REJECT_NO_PROCESS,        /* record of a process not in the table (evicted, or re-exec'd) */
	TRACE_REJECT_MAX,
};
extern const char *const trace_reject_names[TRACE_REJECT_MAX];

struct trace_table_counters {
	uint64_t contexts_read;     /* process contexts read */
	uint64_t threads_resolved;  /* processes whose thread context variable was found */
	uint64_t samples_linked;    /* samples given a link */
	uint64_t rejected[TRACE_REJECT_MAX];
	uint64_t table_full;        /* processes with a context left out: the table was full */
	uint64_t map_failed;        /* entries the BPF map refused */
	uint64_t checks_deferred;   /* looks put off: over TRACE_CHECKS_PER_SECOND */
};

/* Set (entry) or clear (NULL) pid's entry in the BPF program's map. 0 or -errno. */
typedef int (*trace_publish_fn)(void *ctx, uint32_t pid, const struct otelprof_trace_proc *entry);
/* Read pid's process context, as process_ctx_read(). */
typedef int (*trace_read_context_fn)(void *ctx, const char *proc_root, uint32_t pid, struct process_ctx **out);
/* Resolve pid's thread context variable, as thread_ctx_resolve(). */
typedef int (*trace_resolve_thread_fn)(void *ctx, const char *proc_root, uint32_t pid,
				       struct otelprof_trace_proc *out);

struct trace_table_config {
	const char *proc_root;   /* NULL: "/proc" */
	size_t max_processes;    /* 0 or over OTELPROF_MAX_TRACE_PROCS: OTELPROF_MAX_TRACE_PROCS */
	trace_publish_fn publish; /* may be NULL (tests) */
	void *publish_ctx;
	/* Where contexts and variables come from: NULL for the process's memory (tests give their own). */
	trace_read_context_fn read_context;
	trace_resolve_thread_fn resolve_thread;
	void *source_ctx;
};

struct trace_table;

/* NULL when out of memory. */
struct trace_table *trace_table_new(const struct trace_table_config *config);
void trace_table_free(struct trace_table *t);

/* A sample of a process: read its context when it has none, and either was never looked at or its
 * number of mappings (map_count, from the sample) changed since the last look, at most once per
 * TRACE_RECHECK_NS (force: now, whatever it has). now: CLOCK_MONOTONIC. */
void trace_table_check(struct trace_table *t, uint32_t pid, uint64_t start_ns, uint64_t instance,
		       uint32_t map_count, bool force, uint64_t now);
/* Look again for the variables not found yet, when due. */
void trace_table_tick(struct trace_table *t, uint64_t now);
/* The program exec'd or exited: its threads' variable is gone (the entry stays for its samples). */
void trace_table_retire(struct trace_table *t, uint32_t pid);
/* Drop the entry of (pid, instance): its samples are built. */
void trace_table_forget(struct trace_table *t, uint32_t pid, uint64_t instance);

/*
 * The link of a sample's thread context record, in the aggregate's AGG_LINK format, into
 * link[0 .. AGG_LINK_MAX): its length, or 0 (no link: zero ids, or a process not in the table).
 */
size_t trace_table_link(struct trace_table *t, uint32_t pid, uint64_t start_ns, const struct otelprof_trace_ctx *tc,
			uint8_t *link, uint64_t now);

/* The context of (pid, instance), or NULL: its resource attributes describe the process. */
const struct process_ctx *trace_table_context(const struct trace_table *t, uint32_t pid, uint64_t instance);

size_t trace_table_count(const struct trace_table *t);
const struct trace_table_counters *trace_table_counters(const struct trace_table *t);

#endif
