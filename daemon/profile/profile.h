/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon/profile/: the model. An interval's samples (aggregate), interned strings and stacks (intern)
 * and the profile built from them, which every writer and the exporter read. Includes no other daemon
 * folder: only the top-level helpers, the symbolizer and bpf/records.h.
 */
/*
 * A symbolized profile of one interval: what every output format (top table, folded, pprof, OTLP)
 * is written from. Its tables follow the OTLP dictionary: element 0 of every table is the zero
 * value and index 0 means "unset"; strings, functions, mappings, locations and stacks each appear
 * once. Indices are uint32_t into the arrays of struct profile.
 *
 * profile_build() makes one from an aggregate and a symbolizer; the profile owns all its memory
 * (copies of every string and timestamp) and stays valid after both change. profile_free() frees it.
 */
#ifndef OTELPROFD_PROFILE_H
#define OTELPROFD_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/aggregate.h"
#include "symbolizer.h"

struct intern;

/* Name of the synthetic root frame of a user stack that was cut before the program's entry. */
#define PROFILE_TRUNCATED_FRAME "[truncated]"

enum pf_frame_type {
	PF_FRAME_NONE = 0,   /* the zero location */
	PF_FRAME_NATIVE,     /* user-space machine code */
	PF_FRAME_KERNEL,     /* kernel, module or BPF program */
	PF_FRAME_GO,         /* Go code named from the binary's Go function table */
	PF_FRAME_CPYTHON,    /* a Python function, named from its CPython code object */
};

struct pf_function {
	uint32_t name;        /* string: readable name */
	uint32_t system_name; /* string: symbol-table name */
	uint32_t filename;    /* string: source file, 0 when unknown */
	int64_t start_line;
};

struct pf_mapping {
	uint64_t memory_start, memory_limit, file_offset; /* runtime range and file offset */
	uint32_t filename;  /* string: path as the process sees it */
	uint32_t build_id;  /* string: hex GNU build id, 0 when none */
	uint32_t htlhash;   /* string: hex htlhash, 0 when not computed */
	uint32_t go_build_id; /* string: Go build id, 0 when none */
	uint32_t process;   /* owning process (mappings are per process) */
};

struct pf_line {
	uint32_t function;
	int64_t line, column; /* 0 when unknown */
};

struct pf_location {
	enum pf_frame_type type;
	uint32_t mapping;       /* 0 for kernel frames and addresses outside any file */
	uint64_t address;       /* runtime address (return addresses minus 1) */
	uint64_t file_address;  /* the same in the ELF file's own address space (kernel: address) */
	uint32_t first_line;    /* lines[first_line .. first_line + nlines), innermost first */
	uint32_t nlines;        /* 0: not symbolized on the host */
	uint32_t module;        /* string: kernel module or file basename, for labels */
	bool unidentified;      /* in a file that could not be read (no build id): no mapping, one
				   line naming "file+0xOFFSET" instead */
};

struct pf_stack {
	uint32_t first;      /* stack_locations[first .. first + n): location indices, leaf first */
	uint32_t n;
};

enum pf_attr_type { PF_ATTR_STRING, PF_ATTR_INT };

struct pf_attribute {
	uint32_t key;            /* string */
	enum pf_attr_type type;
	uint32_t string_value;   /* string, for PF_ATTR_STRING */
	int64_t int_value;       /* for PF_ATTR_INT */
};

struct pf_process {
	uint32_t pid;
	uint64_t start_ns;        /* process start (CLOCK_BOOTTIME ns): with pid, its identity */
	uint64_t instance;        /* the process table's instance (the program, after an exec); 0 unknown */
	uint32_t name;            /* string: process name (comm of the leader) at its latest sample */
	uint64_t named_at_ns;     /* that sample's time: a later sample under another name renames it
				     (prctl(PR_SET_NAME) after a fork) */
	uint32_t first_attribute; /* process_attributes[first .. first + n): resource attributes */
	uint32_t nattributes;
};

/* What a heap sample (--alloc) is: pprof's heap sample types alloc_objects/alloc_space (sampled in the
 * interval) and inuse_objects/inuse_space (live at its end). */
enum pf_heap {
	PF_HEAP_NONE = 0, /* not an allocation: on- or off-CPU */
	PF_HEAP_ALLOC,    /* allocated in the interval */
	PF_HEAP_INUSE,    /* live at the interval's end, allocated whenever */
};

struct pf_sample {
	uint32_t process;
	uint32_t tid;
	uint32_t thread_name;  /* string */
	uint32_t cpu;
	uint32_t stack;
	uint64_t count;
	uint64_t *timestamps;  /* unix ns, count of them, sorted */
	uint32_t link;         /* the trace span the samples ran under: links[link], 0 for none */
	bool off_cpu;          /* an off-CPU sample: values says how long each wait was */
	uint64_t *values;      /* off-CPU: ns away per timestamp (in the same order); else NULL */
	uint64_t value_sum;    /* off-CPU: sum of values; heap samples: their bytes */
	enum pf_heap heap;     /* an allocation sample (--alloc): values are bytes per timestamp */
	uint64_t objects;      /* heap samples: the allocations they stand for */
};

/* The sample types a profile can show one at a time (top table, folded, flame graph, diff). */
enum pf_view {
	PF_VIEW_CPU = 0,       /* on-CPU samples, counted */
	PF_VIEW_OFF_CPU,       /* off-CPU waits, nanoseconds */
	PF_VIEW_ALLOC_OBJECTS, /* allocations sampled in the interval, objects */
	PF_VIEW_ALLOC_SPACE,   /* the same, bytes */
	PF_VIEW_INUSE_OBJECTS, /* allocations live at the end, objects */
	PF_VIEW_INUSE_SPACE,   /* the same, bytes */
	PF_NVIEWS,
};

/* The sample belongs to the view. */
bool profile_sample_in_view(const struct pf_sample *s, enum pf_view v);
/* Its value there: samples, nanoseconds, objects or bytes. */
uint64_t profile_sample_value(const struct pf_sample *s, enum pf_view v);
/* "cpu", "off_cpu", "alloc_objects", "alloc_space", "inuse_objects", "inuse_space" (pprof's names). */
const char *profile_view_name(enum pf_view v);
/* Its unit: "samples", "nanoseconds", "objects", "bytes". */
const char *profile_view_unit(enum pf_view v);
/* The view by name, or -1. */
int profile_view_by_name(const char *name);

/* A link to a trace span (OTEP 4947 thread context) and the attributes the thread published with it. */
struct pf_link {
	uint8_t trace_id[16];     /* W3C byte order */
	uint8_t span_id[8];
	uint32_t trace_hex;       /* string: trace_id as lowercase hex */
	uint32_t span_hex;        /* string: span_id as lowercase hex */
	uint32_t first_attribute; /* link_attributes[first .. first + n): string attributes, by key */
	uint32_t nattributes;
};

/* A link with zero trace and span ids: it carries attributes only (a sample's goroutine labels
 * without a span), and writers put no trace or span id for it. */
bool profile_link_untraced(const struct pf_link *l);

struct profile_counters {
	uint64_t locations_unsymbolized; /* locations not symbolized on the host (no function name, or
					    named after their unreadable file and offset) */
	uint64_t dropped_table_full;     /* samples left out because a table bound was hit */
	uint64_t truncated_samples;      /* samples whose stack ends in a [truncated] frame */
};

struct profile {
	uint64_t time_unix_ns;  /* start of the interval */
	uint64_t duration_ns;
	uint64_t period_ns;     /* 1e9 / frequency */
	unsigned frequency;

	struct intern *strings; /* id 0 is "" */
	struct pf_function *functions; size_t nfunctions;
	struct pf_mapping *mappings; size_t nmappings;
	struct pf_location *locations; size_t nlocations;
	struct pf_line *lines; size_t nlines;
	struct pf_stack *stacks; size_t nstacks;
	uint32_t *stack_locations; size_t nstack_locations;
	struct pf_process *processes; size_t nprocesses;
	struct pf_attribute *process_attributes; size_t nprocess_attributes;
	struct pf_sample *samples; size_t nsamples;  /* no zero element: samples are not referenced */

	struct profile_counters counters;
	uint64_t total_count;   /* sum of sample counts */

	bool off_cpu_enabled;   /* off-CPU waits were collected (--off-cpu): writers add their type */
	uint64_t off_cpu_ns;    /* sum of the off-CPU samples' values */
	uint64_t off_cpu_count; /* off-CPU waits (timestamps of off-CPU samples); not in total_count */

	bool alloc_enabled;     /* allocations were collected (--alloc): writers add the heap types */
	uint64_t alloc_bytes, alloc_objects; /* sums of the PF_HEAP_ALLOC samples (not in total_count) */
	uint64_t inuse_bytes, inuse_objects; /* sums of the PF_HEAP_INUSE samples */

	/* Allocation bookkeeping of the tables above (capacities); private to profile.c. */
	struct {
		size_t functions, mappings, locations, lines, stacks, stack_locations, processes,
			process_attributes, samples;
	} capacity;

	/* Links (element 0 the zero link, no attributes), deduplicated; their attributes. */
	struct pf_link *links; size_t nlinks, links_capacity;
	struct pf_attribute *link_attributes; size_t nlink_attributes, link_attributes_capacity;
};

/*
 * Called once per process added to the profile, so the caller can add resource attributes with
 * profile_add_process_attribute(). The builder itself adds process.pid.
 */
typedef void (*profile_describe_process_fn)(void *ctx, struct profile *p, uint32_t process);

struct profile_build_options {
	unsigned frequency;
	uint64_t time_unix_ns;  /* interval start */
	uint64_t duration_ns;   /* interval length */
	profile_describe_process_fn describe_process; /* may be NULL */
	void *describe_ctx;
	const struct aggregate *off_cpu; /* the interval's off-CPU waits (valued entries), or NULL */
	const struct aggregate *allocs;  /* --alloc: the interval's sampled allocations, or NULL */
	const struct aggregate *inuse;   /* --alloc: the live sampled allocations at its end, or NULL */
};

/* NULL with errno set on allocation failure. */
struct profile *profile_build(const struct aggregate *agg, struct symbolizer *sym,
			      const struct profile_build_options *options);
/*
 * The same build in slices, so that a caller's loop is never held for the whole of it: new, then
 * step until it says done, then finish. The aggregates (agg and those of options) and the describe
 * context must not change meanwhile (the caller builds from aggregates set aside); options is
 * copied. The builder owns the profile until finish hands it over; free drops both.
 */
struct profile_builder;
/* NULL with errno set on allocation failure. */
struct profile_builder *profile_builder_new(const struct aggregate *agg, struct symbolizer *sym,
					    const struct profile_build_options *options);
/* Add entries until deadline_ns (CLOCK_MONOTONIC; 0: all of them; the clock is read before each
 * entry, and one is added whatever the time): 1 when every entry is in, 0 when some are left,
 * -errno (the build failed). */
int profile_builder_step(struct profile_builder *pb, uint64_t deadline_ns);
/* The rest added at once, the builder freed: the profile, or NULL with errno set (NULL pb: NULL). */
struct profile *profile_builder_finish(struct profile_builder *pb);
/* Drop the builder and its profile unfinished. NULL is fine. */
void profile_builder_free(struct profile_builder *pb);
void profile_free(struct profile *p);

/* The string with id, "" for an unknown id. */
const char *profile_string(const struct profile *p, uint32_t id);
/* Id of s (added when new), 0 on failure (the empty string). */
/* Strings interned so far (by any profile) that were not UTF-8: each byte that starts no
 * well-formed sequence was replaced by '?'. */
uint64_t profile_strings_repaired(void);
uint32_t profile_intern_string(struct profile *p, const char *s);
/* Add a resource attribute to the process; it must be the newest process added. 0 or -errno. */
int profile_add_process_attribute_string(struct profile *p, uint32_t process, const char *key, const char *value);
int profile_add_process_attribute_int(struct profile *p, uint32_t process, const char *key, int64_t value);

/*
 * A label for one line of a location, for text output: the function name, or "module+0xADDR" for
 * a frame that was not symbolized. Written into buf; returns buf.
 */
const char *profile_line_label(const struct profile *p, const struct pf_location *loc, uint32_t line,
			       char *buf, size_t size);

#endif
