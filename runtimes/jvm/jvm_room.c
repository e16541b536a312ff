// SPDX-License-Identifier: Apache-2.0
/*
 * The JVM room behind runtime.h: its process check and perf-map requests run on the attach thread
 * (jvm_attacher.h), told of the processes sampled; JIT frames are named from the perf map by the
 * symbolizer (jvm_names.c). No BPF part.
 */
#include "jvm_attacher.h"
#include "process/process_table.h"
#include "runtime.h"

/* A sampled process is shown to the attach thread at its first sample and every this many after. */
#define JVM_SEEN_EVERY 256

/* The room is the record path's pointer to the attach thread (set after the record path is made). */
static int jvm_open(const struct runtime_env *env, void **room)
{
	*room = (void *)env->jvm;
	return 0;
}

/* Tell the attach thread of a process's first on-CPU sample, and of every JVM_SEEN_EVERY-th after
 * (it asks a JVM for its perf map again at most once per refresh period: code compiled since gets named). */
static void jvm_check(void *room, const struct runtime_sample *rs)
{
	struct jvm_attacher *jvm = *(struct jvm_attacher *const *)room;

	if (jvm && rs->on_cpu && rs->pi && (rs->pi->samples == 1 || !(rs->pi->samples % JVM_SEEN_EVERY)))
		jvm_attacher_seen(jvm, (pid_t)rs->s->pid, rs->s->process_start_ns);
}

const struct runtime_ops jvm_runtime = {
	.name = "jvm",
	.open = jvm_open,
	.check = jvm_check,
};
