// SPDX-License-Identifier: Apache-2.0
/*
 * The Go room behind runtime.h: the process check (go_process.h: the release from .go.buildinfo
 * and its offsets, published to the BPF map go_procs, the label reader loaded at the first one),
 * and a sample's goroutine labels put on its link (go_labels.h). Go frames are unwound and named
 * by the symbolizer (go_unwind.c, symbolizer/gopclntab.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "process/process_table.h"
#include "runtime.h"

/* A process's executable is checked for Go at its first sample, and again at this one (the first
 * may have been taken during its execve, before /proc/PID/exe named the new program). */
#define GO_CHECK_AGAIN 32

struct go_room {
	go_publish_fn publish;
	void *publish_ctx;
	struct go_process_counters *processes; /* borrowed: the record path's */
	struct go_labels_counters *labels;      /* borrowed: the record path's */
};

static int go_open(const struct runtime_env *env, void **out)
{
	struct go_room *room;
	int r = runtime_room_alloc(env->go_publish, sizeof(*room), out);

	if (r || !*out)
		return r;
	room = *out;
	*room = (struct go_room){
		.publish = env->go_publish, .publish_ctx = env->go_publish_ctx,
		.processes = env->go_processes, .labels = env->go_labels,
	};
	return 0;
}

static void go_close(void *room)
{
	free(room);
}

/* At a process's first on-CPU samples: a Go binary of a known release gets its label reader's entry. */
static void go_check(void *r, const struct runtime_sample *rs)
{
	struct go_room *room = r;
	struct otelprof_go_proc entry;
	const struct otelprof_sample *s = rs->s;
	int n;

	if (!rs->on_cpu || !rs->pi || (rs->pi->samples != 1 && rs->pi->samples != GO_CHECK_AGAIN) ||
	    (s->flags & OTELPROF_SAMPLE_KERNEL_THREAD))
		return;
	n = go_process_check(s->pid, s->process_start_ns, &entry);
	if (n == -ENOTSUP && rs->pi->samples == 1)
		room->processes->unknown++;
	if (n)
		return;
	if (room->publish(room->publish_ctx, s->pid, &entry))
		room->processes->publish_failed++;
	else if (rs->pi->samples == 1)
		room->processes->published++;
}

/* A process that exec'd or exited is no Go process of ours any more: its program's offsets must not
 * be used for the next (an exec keeps the start time the BPF entry is checked against). */
static void go_retire(void *r, uint32_t pid)
{
	struct go_room *room = r;

	room->publish(room->publish_ctx, pid, NULL);
}

static size_t go_attributes(void *r, const struct runtime_sample *rs, uint8_t *link, size_t len, size_t cap)
{
	return go_labels_link(rs->data, rs->size, link, len, cap, ((struct go_room *)r)->labels);
}

const struct runtime_ops go_runtime = {
	.name = "go",
	.open = go_open,
	.close = go_close,
	.check = go_check,
	.retire = go_retire,
	.attributes = go_attributes,
};
