// SPDX-License-Identifier: Apache-2.0
/*
 * The Python room behind runtime.h: the process check (python_table.h: libpython and its layout,
 * the BPF map entry published, the walk loaded at the first one), the code objects attached to
 * the symbolizer's instance, and a sample's Python frames put in its stack (python_sample.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "process/process_table.h"
#include "runtime.h"
#include "symbolizer.h"

struct python_room {
	struct python_table *table;              /* owned */
	struct symbolizer *sym;                  /* borrowed */
	struct python_sample_counters *counters; /* borrowed: the record path's */
	struct otelprof_sample with_python;      /* the sample being added, with its Python frames */
};

/* The instance's interpreter: none, with no /proc/PID/maps read, when the symbolizer knows all its
 * executable mappings (the kernel's mmap events) and none is an interpreter's; else looked for in
 * its maps. */
static int python_find(void *ctx, const char *proc_root, uint32_t pid, uint64_t instance, struct python_process *out)
{
	struct python_room *room = ctx;

	if (!symbolizer_instance_maps_any(room->sym, (pid_t)pid, instance, python_process_interpreter_name))
		return -ENOENT;
	return python_process_find(proc_root, pid, out);
}

static int python_open(const struct runtime_env *env, void **out)
{
	struct python_room *room;
	int r = runtime_room_alloc(env->python_publish, sizeof(*room), out);

	if (r || !*out)
		return r;
	room = *out;
	room->table = python_table_new(&(struct python_table_config){
		.publish = env->python_publish, .publish_ctx = env->python_publish_ctx,
		.find = python_find, .find_ctx = room,
	});
	if (!room->table) {
		free(room);
		*out = NULL;
		return -ENOMEM;
	}
	room->sym = env->sym;
	room->counters = env->python;
	return 0;
}

static void python_close(void *r)
{
	struct python_room *room = r;

	if (room)
		python_table_free(room->table);
	free(room);
}

/* Look for the interpreter of a record's process (at a few of its first records, of any kind: a
 * Python process that switched out before its first on-CPU sample was never looked at otherwise),
 * first thing: the samples taken until the BPF program has the process's entry have no Python frames. */
static void python_check(void *r, const struct runtime_sample *rs)
{
	struct python_room *room = r;
	const struct python_entry *e;

	if (!rs->pi)
		return;
	e = python_table_check(room->table, rs->s->pid, rs->s->process_start_ns, rs->instance, rs->pi->samples);
	if (e)
		symbolizer_python_attach(room->sym, (pid_t)rs->s->pid, rs->instance, &e->proc.layout, e->proc.code_type);
}

static void python_retire(void *r, uint32_t pid)
{
	python_table_retire(((struct python_room *)r)->table, pid);
}

static void python_forget(void *r, uint32_t pid, uint64_t instance)
{
	python_table_forget(((struct python_room *)r)->table, pid, instance);
}

/* The Python frames of a CPython process's sample, in its stack. */
static const struct otelprof_sample *python_frames(void *r, const struct runtime_sample *rs,
						   const struct otelprof_sample *unwound)
{
	struct python_room *room = r;

	if (!rs->pi || !(rs->s->flags & OTELPROF_SAMPLE_PYTHON))
		return unwound;
	return python_sample(room->table, room->sym, rs->instance, unwound, rs->data, rs->size, &room->with_python,
			     room->counters);
}

const struct python_table_counters *python_room_counters(const void *room)
{
	return room ? python_table_counters(((const struct python_room *)room)->table) : NULL;
}

const struct runtime_ops python_runtime = {
	.name = "python",
	.open = python_open,
	.close = python_close,
	.check = python_check,
	.retire = python_retire,
	.forget = python_forget,
	.frames = python_frames,
};
