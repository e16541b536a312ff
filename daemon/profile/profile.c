// SPDX-License-Identifier: Apache-2.0
#include "profile/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "profile/intern.h"
#include "utf8.h"

/* Bound on the keys of every dedup table of one profile. */
#define PROFILE_MAX_KEYS (1u << 22)

/* Dedup indexes used while building; the profile keeps only the tables. */
struct builder {
	struct profile *p;
	struct symbolizer *sym;
	struct intern *functions, *mappings, *locations, *stacks, *processes;
	uint32_t *link_map; /* aggregate link id -> profile link index, 0 = not yet added */
};

struct location_key {
	uint32_t type;
	uint32_t process; /* 0 for kernel frames: shared by every process */
	uint64_t address;
};

struct mapping_key {
	uint32_t process;
	uint32_t filename;
	uint64_t start, limit, offset;
};

struct function_key {
	uint32_t name, system_name, filename;
	uint32_t pad;
	int64_t start_line;
};

static int grow(void **array, size_t *capacity, size_t n, size_t elem)
{
	size_t cap;
	void *p;

	if (n < *capacity)
		return 0;
	cap = *capacity ? *capacity * 2 : 64;
	p = realloc(*array, cap * elem);
	if (!p)
		return -ENOMEM;
	*array = p;
	*capacity = cap;
	return 0;
}

/* Room for one more element in table p->name (count p->n<name>). */
#define RESERVE(p, table, count) \
	grow((void **)&(p)->table, &(p)->capacity.table, (p)->count, sizeof(*(p)->table))

const char *profile_string(const struct profile *p, uint32_t id)
{
	const char *s = intern_key(p->strings, id, NULL);

	return s ? s : "";
}

/* Strings given to profiles that were not UTF-8, repaired (every profile of the daemon's life). */
static _Atomic uint64_t strings_repaired;

uint64_t profile_strings_repaired(void)
{
	return strings_repaired;
}

uint32_t profile_intern_string(struct profile *p, const char *s)
{
	size_t len;
	int64_t id;

	if (!s || !*s)
		return 0;
	len = strlen(s);
	if (utf8_valid_prefix(s, len) != len) {
		/* A process's name, a path or a hostile binary's symbol: protobuf strings must be UTF-8,
		 * and the Collector and protoc refuse a whole message for one that is not. */
		char *copy = strdup(s);

		if (!copy)
			return 0;
		utf8_repair(copy, len);
		strings_repaired++;
		id = intern_put(p->strings, copy, len + 1, NULL);
		free(copy);
		return id < 0 ? 0 : (uint32_t)id;
	}
	id = intern_put(p->strings, s, len + 1, NULL);
	return id < 0 ? 0 : (uint32_t)id;
}

static int add_attribute(struct profile *p, uint32_t process, const struct pf_attribute *a)
{
	struct pf_process *proc;

	if (process + 1 != p->nprocesses || !a->key)
		return -EINVAL;
	if (RESERVE(p, process_attributes, nprocess_attributes))
		return -ENOMEM;
	proc = &p->processes[process];
	if (!proc->nattributes)
		proc->first_attribute = (uint32_t)p->nprocess_attributes;
	p->process_attributes[p->nprocess_attributes++] = *a;
	proc->nattributes++;
	return 0;
}

int profile_add_process_attribute_string(struct profile *p, uint32_t process, const char *key, const char *value)
{
	struct pf_attribute a = {
		.key = profile_intern_string(p, key), .type = PF_ATTR_STRING,
		.string_value = profile_intern_string(p, value),
	};

	return add_attribute(p, process, &a);
}

int profile_add_process_attribute_int(struct profile *p, uint32_t process, const char *key, int64_t value)
{
	struct pf_attribute a = { .key = profile_intern_string(p, key), .type = PF_ATTR_INT, .int_value = value };

	return add_attribute(p, process, &a);
}

static struct profile *profile_new(void)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->strings = intern_new(PROFILE_MAX_KEYS);
	if (!p->strings || intern_put(p->strings, "", 1, NULL) != 0 ||
	    RESERVE(p, functions, nfunctions) || RESERVE(p, mappings, nmappings) ||
	    RESERVE(p, locations, nlocations) || RESERVE(p, stacks, nstacks) ||
	    RESERVE(p, processes, nprocesses)) {
		profile_free(p);
		return NULL;
	}
	/* Element 0 of every table is the zero value. */
	p->functions[p->nfunctions++] = (struct pf_function){ 0 };
	p->mappings[p->nmappings++] = (struct pf_mapping){ 0 };
	p->locations[p->nlocations++] = (struct pf_location){ 0 };
	p->stacks[p->nstacks++] = (struct pf_stack){ 0 };
	p->processes[p->nprocesses++] = (struct pf_process){ 0 };
	if (grow((void **)&p->links, &p->links_capacity, p->nlinks, sizeof(*p->links))) {
		profile_free(p);
		return NULL;
	}
	p->links[p->nlinks++] = (struct pf_link){ 0 };
	return p;
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nsamples; i++) {
		free(p->samples[i].timestamps);
		free(p->samples[i].values);
	}
	intern_free(p->strings);
	free(p->functions);
	free(p->mappings);
	free(p->locations);
	free(p->lines);
	free(p->stacks);
	free(p->stack_locations);
	free(p->processes);
	free(p->process_attributes);
	free(p->samples);
	free(p->links);
	free(p->link_attributes);
	free(p);
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static int64_t add_function(struct builder *b, const struct sym_line *line)
{
	struct profile *p = b->p;
	struct function_key key = {
		.name = profile_intern_string(p, line->function),
		.system_name = profile_intern_string(p, line->system_name),
		.filename = profile_intern_string(p, line->file),
	};
	int added;
	int64_t id = intern_put(b->functions, &key, sizeof(key), &added);

	if (id < 0 || !added)
		return id < 0 ? id : id + 1;
	if (RESERVE(p, functions, nfunctions))
		return -ENOMEM;
	p->functions[p->nfunctions++] = (struct pf_function){
		.name = key.name, .system_name = key.system_name, .filename = key.filename,
	};
	return id + 1; /* +1: the zero function comes first */
}

static int64_t add_mapping(struct builder *b, uint32_t process, const struct sym_mapping *m)
{
	struct profile *p = b->p;
	struct mapping_key key = {
		.process = process, .filename = profile_intern_string(p, m->path),
		.start = m->start, .limit = m->limit, .offset = m->file_offset,
	};
	int added;
	int64_t id = intern_put(b->mappings, &key, sizeof(key), &added);

	if (id < 0 || !added)
		return id < 0 ? id : id + 1;
	if (RESERVE(p, mappings, nmappings))
		return -ENOMEM;
	p->mappings[p->nmappings++] = (struct pf_mapping){
		.memory_start = m->start, .memory_limit = m->limit, .file_offset = m->file_offset,
		.filename = key.filename, .build_id = profile_intern_string(p, m->build_id),
		.htlhash = profile_intern_string(p, m->htlhash), .process = process,
		.go_build_id = profile_intern_string(p, m->go_build_id),
	};
	return id + 1;
}

/*
 * A frame in a file that could not be read (its process exited, the file is gone, unreadable or
 * not ELF) has no build id, and the sheet forbids a Mapping without one: the location gets no
 * mapping and one line whose function names the file and the file offset ("libfoo.so+0x1234",
 * the full path in system_name), so a backend still sees where the frame was.
 */
static int add_unidentified_line(struct builder *b, const struct sym_frame *frame, uint64_t address,
				 struct pf_location *loc)
{
	struct profile *p = b->p;
	uint64_t offset = address - frame->mapping.start + frame->mapping.file_offset;
	char name[512], system_name[4096 + 32];
	struct sym_line line = { .function = name, .system_name = system_name };
	int64_t f;

	snprintf(name, sizeof(name), "%s+0x%" PRIx64, basename_of(frame->mapping.path), offset);
	snprintf(system_name, sizeof(system_name), "%s+0x%" PRIx64, frame->mapping.path, offset);
	f = add_function(b, &line);
	if (f < 0)
		return (int)f;
	if (grow((void **)&p->lines, &p->capacity.lines, p->nlines, sizeof(*p->lines)))
		return -ENOMEM;
	loc->module = profile_intern_string(p, basename_of(frame->mapping.path));
	loc->file_address = offset;
	loc->first_line = (uint32_t)p->nlines;
	loc->nlines = 1;
	loc->unidentified = true;
	p->lines[p->nlines++] = (struct pf_line){ .function = (uint32_t)f };
	return 0;
}

/* Location index of one frame address, symbolized on first sight. */
static int64_t add_location(struct builder *b, uint32_t process, enum pf_frame_type type, uint64_t address)
{
	struct profile *p = b->p;
	struct location_key key = {
		.type = type, .process = type == PF_FRAME_KERNEL ? 0 : process, .address = address,
	};
	struct pf_location loc = { .type = type, .address = address };
	struct sym_frame frame;
	int added, r;
	int64_t id = intern_put(b->locations, &key, sizeof(key), &added);

	if (id < 0 || !added)
		return id < 0 ? id : id + 1;

	if (type == PF_FRAME_KERNEL) {
		symbolizer_kernel(b->sym, address, &frame);
		loc.module = profile_intern_string(p, frame.module ? frame.module : "kernel");
	} else {
		const struct pf_process *proc = &p->processes[process];

		symbolizer_user_instance(b->sym, (pid_t)proc->pid, proc->instance, address, &frame);
		if (frame.kind == SYM_FRAME_GO)
			loc.type = PF_FRAME_GO;
		else if (frame.kind == SYM_FRAME_CPYTHON)
			loc.type = PF_FRAME_CPYTHON;
		if (frame.has_mapping && !frame.mapping.build_id && !frame.mapping.htlhash) {
			r = add_unidentified_line(b, &frame, address, &loc);
			if (r)
				return r;
		} else if (frame.has_mapping) {
			int64_t m = add_mapping(b, process, &frame.mapping);

			if (m < 0)
				return m;
			loc.mapping = (uint32_t)m;
			loc.module = profile_intern_string(p, basename_of(frame.mapping.path));
		} else {
			/* JIT code from a perf map says "[jit]"; anything else outside a file is unknown. */
			loc.module = profile_intern_string(p, frame.module ? frame.module : "[unknown]");
		}
	}
	if (!loc.unidentified) {
		loc.file_address = frame.file_address;
		loc.first_line = (uint32_t)p->nlines;
	}
	for (unsigned i = 0; !loc.unidentified && i < frame.nlines && i < SYM_MAX_INLINE; i++) {
		int64_t f = add_function(b, &frame.lines[i]);

		if (f < 0)
			return f;
		if (grow((void **)&p->lines, &p->capacity.lines, p->nlines, sizeof(*p->lines)))
			return -ENOMEM;
		p->lines[p->nlines++] = (struct pf_line){
			.function = (uint32_t)f, .line = frame.lines[i].line, .column = frame.lines[i].column,
		};
		loc.nlines++;
	}
	if (!loc.nlines || loc.unidentified)
		p->counters.locations_unsymbolized++;
	if (RESERVE(p, locations, nlocations))
		return -ENOMEM;
	p->locations[p->nlocations++] = loc;
	return id + 1;
}

/*
 * The location of the [truncated] root frame, shared by every process: no mapping, one line whose
 * function is named PROFILE_TRUNCATED_FRAME, so every writer shows it like any other function.
 */
static int64_t add_truncated_location(struct builder *b)
{
	struct profile *p = b->p;
	/* A type no real frame has, so the key cannot meet a real location. */
	struct location_key key = { .type = UINT32_MAX };
	struct sym_line line = { .function = PROFILE_TRUNCATED_FRAME, .system_name = PROFILE_TRUNCATED_FRAME };
	struct pf_location loc = { .type = PF_FRAME_NATIVE };
	int added;
	int64_t id = intern_put(b->locations, &key, sizeof(key), &added), f;

	if (id < 0 || !added)
		return id < 0 ? id : id + 1;
	f = add_function(b, &line);
	if (f < 0)
		return f;
	if (grow((void **)&p->lines, &p->capacity.lines, p->nlines, sizeof(*p->lines)) ||
	    RESERVE(p, locations, nlocations))
		return -ENOMEM;
	loc.first_line = (uint32_t)p->nlines;
	loc.nlines = 1;
	loc.module = profile_intern_string(p, PROFILE_TRUNCATED_FRAME);
	p->lines[p->nlines++] = (struct pf_line){ .function = (uint32_t)f };
	p->locations[p->nlocations++] = loc;
	return id + 1;
}

/* The source line of a user address of process (0: none known). */
static unsigned user_line(struct builder *b, uint32_t process, uint64_t address)
{
	const struct pf_process *proc = &b->p->processes[process];
	struct sym_frame frame;

	if (symbolizer_user_instance(b->sym, (pid_t)proc->pid, proc->instance, address, &frame) || !frame.nlines)
		return 0;
	return frame.lines[0].line;
}

static int64_t add_stack(struct builder *b, uint32_t process, const struct agg_stack *st)
{
	struct profile *p = b->p;
	size_t n = (size_t)st->kernel_depth + st->user_depth;
	uint32_t locs[2 * OTELPROF_MAX_STACK_DEPTH + 1];
	int added;
	int64_t id;

	for (size_t i = 0; i < n; i++) {
		bool kernel = i < st->kernel_depth;
		size_t depth = kernel ? i : i - st->kernel_depth;
		/* The leaf is the interrupted instruction; every other address is a return address, and
		 * the call that made it is the byte before. A user leaf under a kernel frame is the
		 * return address of the system call or interrupt. */
		bool exact = (depth == 0 && (kernel || !st->kernel_mode)) ||
			     (!kernel && python_frame_address_is(st->ips[i])); /* not a return address */
		uint64_t address = st->ips[i] - (exact ? 0 : 1);
		int64_t loc;

		/* A user leaf under kernel frames is a system call's return address, or, for a thread
		 * preempted by an interrupt, the interrupted instruction itself: when the byte before it
		 * has no line (alignment padding before a loop's head, which no call instruction is), it
		 * was the latter. */
		if (!kernel && depth == 0 && !exact && user_line(b, process, address) == 0 &&
		    user_line(b, process, st->ips[i]) != 0)
			address = st->ips[i];
		loc = add_location(b, process, kernel ? PF_FRAME_KERNEL : PF_FRAME_NATIVE, address);

		if (loc < 0)
			return loc;
		locs[i] = (uint32_t)loc;
	}
	if (st->user_truncated) {
		int64_t loc = add_truncated_location(b);

		if (loc < 0)
			return loc;
		locs[n++] = (uint32_t)loc;
	}
	id = intern_put(b->stacks, locs, n * sizeof(*locs), &added);
	if (id < 0 || !added)
		return id < 0 ? id : id + 1;
	if (RESERVE(p, stacks, nstacks))
		return -ENOMEM;
	if (p->nstack_locations + n > p->capacity.stack_locations) {
		size_t cap = p->capacity.stack_locations ? p->capacity.stack_locations : 256;
		uint32_t *grown;

		while (cap < p->nstack_locations + n)
			cap *= 2;
		grown = realloc(p->stack_locations, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		p->stack_locations = grown;
		p->capacity.stack_locations = cap;
	}
	if (n) /* an empty stack (both walks failed) has no array yet */
		memcpy(p->stack_locations + p->nstack_locations, locs, n * sizeof(*locs));
	p->stacks[p->nstacks++] = (struct pf_stack){ .first = (uint32_t)p->nstack_locations, .n = (uint32_t)n };
	p->nstack_locations += n;
	return id + 1;
}

static int64_t add_process(struct builder *b, const struct agg_entry *e)
{
	struct profile *p = b->p;
	struct { uint64_t start, instance; uint32_t pid, pad; } key = {
		.start = e->process_start_ns, .instance = e->process_instance, .pid = e->pid,
	};
	int added;
	int64_t id = intern_put(b->processes, &key, sizeof(key), &added);
	uint32_t index;

	if (id < 0 || !added)
		return id < 0 ? id : id + 1;
	if (RESERVE(p, processes, nprocesses))
		return -ENOMEM;
	index = (uint32_t)p->nprocesses++;
	p->processes[index] = (struct pf_process){
		.pid = e->pid, .start_ns = e->process_start_ns, .instance = e->process_instance,
		.name = profile_intern_string(p, e->process_comm),
	};
	profile_add_process_attribute_int(p, index, "process.pid", e->pid);
	return index;
}

/* A process renamed after its first samples (prctl(PR_SET_NAME) after a fork) bears the name of its
 * latest sample, whichever entry the build met first: latest_ns is e's latest sample. */
static void name_process(struct profile *p, uint32_t process, const struct agg_entry *e, uint64_t latest_ns)
{
	struct pf_process *proc = &p->processes[process];

	if (latest_ns <= proc->named_at_ns)
		return;
	proc->name = profile_intern_string(p, e->process_comm);
	proc->named_at_ns = latest_ns;
}

static uint32_t intern_hex(struct profile *p, const uint8_t *bytes, size_t n)
{
	char hex[33];

	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
	return profile_intern_string(p, hex);
}

bool profile_link_untraced(const struct pf_link *l)
{
	static const uint8_t zero[16];

	return !memcmp(l->trace_id, zero, 16) && !memcmp(l->span_id, zero, 8);
}

/* Profile index of the aggregate's link id (from agg_entry.link - 1); added on first sight. */
static int64_t add_link(struct builder *b, const struct aggregate *agg, uint32_t id)
{
	struct profile *p = b->p;
	const uint8_t *bytes;
	struct pf_link *l;
	size_t len, at;

	if (b->link_map[id])
		return b->link_map[id];
	bytes = aggregate_link(agg, id, &len);
	if (!bytes || len < AGG_LINK_IDS)
		return 0;
	if (grow((void **)&p->links, &p->links_capacity, p->nlinks, sizeof(*p->links)))
		return -ENOMEM;
	l = &p->links[p->nlinks];
	*l = (struct pf_link){ .first_attribute = (uint32_t)p->nlink_attributes };
	memcpy(l->trace_id, bytes, 16);
	memcpy(l->span_id, bytes + 16, 8);
	l->trace_hex = intern_hex(p, l->trace_id, 16);
	l->span_hex = intern_hex(p, l->span_id, 8);
	/* "key\0value\0" pairs: both ends are inside the bytes, the aggregate made them. */
	for (at = AGG_LINK_IDS; at < len;) {
		const char *key = (const char *)bytes + at, *value = key + strlen(key) + 1;

		if (grow((void **)&p->link_attributes, &p->link_attributes_capacity, p->nlink_attributes,
			 sizeof(*p->link_attributes)))
			return -ENOMEM;
		p->link_attributes[p->nlink_attributes++] = (struct pf_attribute){
			.key = profile_intern_string(p, key), .type = PF_ATTR_STRING,
			.string_value = profile_intern_string(p, value),
		};
		l->nattributes++;
		at = (size_t)(value - (const char *)bytes) + strlen(value) + 1;
	}
	b->link_map[id] = (uint32_t)p->nlinks;
	return (int64_t)p->nlinks++;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int add_sample(struct builder *b, const struct aggregate *agg, const struct agg_entry *e,
		      const struct profile_build_options *options)
{
	struct profile *p = b->p;
	size_t before = p->nprocesses;
	int64_t process = add_process(b, e), stack, link = 0;
	struct pf_sample *s;

	if (process < 0)
		return (int)process;
	if (p->nprocesses > before && options->describe_process)
		options->describe_process(options->describe_ctx, p, (uint32_t)process);
	stack = add_stack(b, (uint32_t)process, aggregate_stack(agg, e->stack_id));
	if (stack < 0)
		return (int)stack;
	if (e->link && (link = add_link(b, agg, e->link - 1)) < 0)
		return (int)link;
	if (RESERVE(p, samples, nsamples))
		return -ENOMEM;
	s = &p->samples[p->nsamples];
	*s = (struct pf_sample){
		.process = (uint32_t)process, .tid = e->tid, .thread_name = profile_intern_string(p, e->comm),
		.cpu = e->cpu, .stack = (uint32_t)stack, .count = e->ntimestamps, .link = (uint32_t)link,
	};
	s->timestamps = malloc(e->ntimestamps * sizeof(uint64_t));
	if (!s->timestamps)
		return -ENOMEM;
	memcpy(s->timestamps, e->timestamps, e->ntimestamps * sizeof(uint64_t));
	if (e->ntimestamps > 1)
		qsort(s->timestamps, e->ntimestamps, sizeof(uint64_t), compare_u64);
	if (e->ntimestamps)
		name_process(p, (uint32_t)process, e, s->timestamps[e->ntimestamps - 1]);
	p->nsamples++;
	p->total_count += s->count;
	if (aggregate_stack(agg, e->stack_id)->user_truncated)
		p->counters.truncated_samples += s->count;
	return 0;
}

struct value_pair {
	uint64_t time, value;
};

static int compare_pair(const void *a, const void *b)
{
	return compare_u64(&((const struct value_pair *)a)->time, &((const struct value_pair *)b)->time);
}

/*
 * Valued samples (off-CPU waits, allocations), after the on-CPU ones and in the same tables: a process
 * or stack seen by both is one entry. A sample's values follow its timestamps' sorted order.
 */
/* One valued entry (an off-CPU wait's, an allocation's) of agg, as heap says. */
static int add_valued_entry(struct builder *b, const struct aggregate *agg, const struct agg_entry *e,
			    const struct profile_build_options *options, enum pf_heap heap)
{
	struct profile *p = b->p;
	struct value_pair *pairs;
	struct pf_sample *s;
	int err = e->values ? add_sample(b, agg, e, options) : 0;

	if (err == -ENOSPC) {
		p->counters.dropped_table_full += e->count;
		return 0;
	}
	if (err || !e->values)
		return err;
	s = &p->samples[p->nsamples - 1];
	p->total_count -= s->count; /* add_sample counted them as on-CPU samples */
	s->off_cpu = heap == PF_HEAP_NONE;
	s->heap = heap;
	s->objects = e->objects_sum;
	s->values = malloc(e->ntimestamps * sizeof(uint64_t));
	pairs = malloc(e->ntimestamps * sizeof(*pairs));
	if (!s->values || !pairs) {
		free(pairs);
		return -ENOMEM;
	}
	for (size_t j = 0; j < e->ntimestamps; j++)
		pairs[j] = (struct value_pair){ e->timestamps[j], e->values[j] };
	qsort(pairs, e->ntimestamps, sizeof(*pairs), compare_pair);
	for (size_t j = 0; j < e->ntimestamps; j++) {
		s->timestamps[j] = pairs[j].time;
		s->values[j] = pairs[j].value;
	}
	free(pairs);
	s->value_sum = e->value_sum;
	switch (heap) {
	case PF_HEAP_NONE:
		p->off_cpu_ns += e->value_sum;
		p->off_cpu_count += s->count;
		break;
	case PF_HEAP_ALLOC:
		p->alloc_bytes += e->value_sum;
		p->alloc_objects += e->objects_sum;
		break;
	case PF_HEAP_INUSE:
		p->inuse_bytes += e->value_sum;
		p->inuse_objects += e->objects_sum;
		break;
	}
	return 0;
}

/* The aggregates a build goes through, in order: on-CPU samples, then the valued ones. */
enum build_stage { STAGE_ON_CPU, STAGE_OFF_CPU, STAGE_ALLOCS, STAGE_INUSE, STAGE_DONE };

struct profile_builder {
	struct builder b;
	const struct aggregate *agg;
	struct profile_build_options options;
	enum build_stage stage;
	size_t next;  /* the next entry of the stage's aggregate */
	int err;      /* the first error (then the build is over) */
};

static void builder_release(struct builder *b)
{
	intern_free(b->functions);
	intern_free(b->mappings);
	intern_free(b->locations);
	intern_free(b->stacks);
	intern_free(b->processes);
	free(b->link_map);
}

struct profile_builder *profile_builder_new(const struct aggregate *agg, struct symbolizer *sym,
					    const struct profile_build_options *options)
{
	struct profile_builder *pb = calloc(1, sizeof(*pb));
	struct builder *b;
	struct profile *p;

	if (!pb)
		return NULL;
	b = &pb->b;
	pb->agg = agg;
	pb->options = *options;
	b->sym = sym;
	b->p = p = profile_new();
	b->functions = intern_new(PROFILE_MAX_KEYS);
	b->mappings = intern_new(PROFILE_MAX_KEYS);
	b->locations = intern_new(PROFILE_MAX_KEYS);
	b->stacks = intern_new(PROFILE_MAX_KEYS);
	b->processes = intern_new(PROFILE_MAX_KEYS);
	b->link_map = calloc(aggregate_link_count(agg) + 1, sizeof(*b->link_map));
	if (!p || !b->functions || !b->mappings || !b->locations || !b->stacks || !b->processes || !b->link_map) {
		builder_release(b);
		profile_free(p);
		free(pb);
		errno = ENOMEM;
		return NULL;
	}
	p->frequency = options->frequency;
	p->period_ns = options->frequency ? 1000000000ULL / options->frequency : 0;
	p->time_unix_ns = options->time_unix_ns;
	p->duration_ns = options->duration_ns;
	p->off_cpu_enabled = options->off_cpu != NULL;
	p->alloc_enabled = options->allocs != NULL;
	return pb;
}

/* The aggregate of a stage, or NULL when the build has none. */
static const struct aggregate *stage_aggregate(const struct profile_builder *pb)
{
	switch (pb->stage) {
	case STAGE_ON_CPU:
		return pb->agg;
	case STAGE_OFF_CPU:
		return pb->options.off_cpu;
	case STAGE_ALLOCS:
		return pb->options.allocs;
	case STAGE_INUSE:
		return pb->options.inuse;
	default:
		return NULL;
	}
}

static const enum pf_heap stage_heap[] = {
	[STAGE_OFF_CPU] = PF_HEAP_NONE, [STAGE_ALLOCS] = PF_HEAP_ALLOC, [STAGE_INUSE] = PF_HEAP_INUSE,
};

int profile_builder_step(struct profile_builder *pb, uint64_t deadline_ns)
{
	struct profile *p = pb->b.p;
	bool added = false;

	while (pb->stage != STAGE_DONE && !pb->err) {
		const struct aggregate *agg = stage_aggregate(pb);

		if (!agg || pb->next >= aggregate_entry_count(agg)) {
			pb->stage++;
			pb->next = 0;
			continue;
		}
		/* At least one entry a step, whatever the time: every build ends. */
		if (deadline_ns && added && clock_ns(CLOCK_MONOTONIC) >= deadline_ns)
			return 0;
		added = true;
		if (pb->stage == STAGE_ON_CPU) {
			const struct agg_entry *e = aggregate_entry(agg, pb->next);
			int err = add_sample(&pb->b, agg, e, &pb->options);

			if (err == -ENOSPC)
				p->counters.dropped_table_full += e->count;
			else
				pb->err = err;
		} else {
			pb->err = add_valued_entry(&pb->b, agg, aggregate_entry(agg, pb->next), &pb->options,
						   stage_heap[pb->stage]);
		}
		pb->next++;
	}
	return pb->err ? pb->err : 1;
}

struct profile *profile_builder_finish(struct profile_builder *pb)
{
	struct profile *p;
	int err;

	if (!pb)
		return NULL;
	err = pb->stage == STAGE_DONE || pb->err ? pb->err : profile_builder_step(pb, 0);
	p = pb->b.p;
	builder_release(&pb->b);
	free(pb);
	if (err < 0) {
		profile_free(p);
		errno = -err;
		return NULL;
	}
	return p;
}

void profile_builder_free(struct profile_builder *pb)
{
	if (!pb)
		return;
	builder_release(&pb->b);
	profile_free(pb->b.p);
	free(pb);
}

struct profile *profile_build(const struct aggregate *agg, struct symbolizer *sym,
			      const struct profile_build_options *options)
{
	return profile_builder_finish(profile_builder_new(agg, sym, options));
}

const char *profile_line_label(const struct profile *p, const struct pf_location *loc, uint32_t line,
			       char *buf, size_t size)
{
	if (line < loc->nlines) {
		const struct pf_function *f = &p->functions[p->lines[loc->first_line + line].function];

		snprintf(buf, size, "%s", profile_string(p, f->name ? f->name : f->system_name));
	} else {
		snprintf(buf, size, "%s+0x%" PRIx64, profile_string(p, loc->module), loc->file_address);
	}
	return buf;
}

bool profile_sample_in_view(const struct pf_sample *s, enum pf_view v)
{
	switch (v) {
	case PF_VIEW_CPU:
		return !s->heap && !s->off_cpu;
	case PF_VIEW_OFF_CPU:
		return s->off_cpu;
	case PF_VIEW_ALLOC_OBJECTS:
	case PF_VIEW_ALLOC_SPACE:
		return s->heap == PF_HEAP_ALLOC;
	case PF_VIEW_INUSE_OBJECTS:
	case PF_VIEW_INUSE_SPACE:
		return s->heap == PF_HEAP_INUSE;
	default:
		return false;
	}
}

uint64_t profile_sample_value(const struct pf_sample *s, enum pf_view v)
{
	switch (v) {
	case PF_VIEW_CPU:
		return s->count;
	case PF_VIEW_ALLOC_OBJECTS:
	case PF_VIEW_INUSE_OBJECTS:
		return s->objects;
	default:
		return s->value_sum;
	}
}

static const char *const view_names[PF_NVIEWS] = {
	"cpu", "off_cpu", "alloc_objects", "alloc_space", "inuse_objects", "inuse_space",
};
static const char *const view_units[PF_NVIEWS] = {
	"samples", "nanoseconds", "objects", "bytes", "objects", "bytes",
};

const char *profile_view_name(enum pf_view v)
{
	return (unsigned)v < PF_NVIEWS ? view_names[v] : "";
}

const char *profile_view_unit(enum pf_view v)
{
	return (unsigned)v < PF_NVIEWS ? view_units[v] : "";
}

int profile_view_by_name(const char *name)
{
	for (int v = 0; v < PF_NVIEWS; v++)
		if (!strcmp(name, view_names[v]))
			return v;
	return -1;
}
