// SPDX-License-Identifier: Apache-2.0
#include "python_table.h"

#include <errno.h>
#include <stdlib.h>

#include "log.h"

#define BUCKETS 1024

struct slot {
	struct python_entry e;
	uint32_t next; /* index + 1 of the next slot of its bucket (0: none) */
};

struct python_table {
	struct python_table_config cfg;
	struct slot *slots; /* dense [0, n) */
	size_t n, max;
	uint32_t buckets[BUCKETS]; /* index + 1 of each bucket's first slot */
	struct python_table_counters counters;
};

static int find_interpreter(void *ctx, const char *proc_root, uint32_t pid, uint64_t instance,
			    struct python_process *out)
{
	(void)ctx;
	(void)instance;
	return python_process_find(proc_root, pid, out);
}

struct python_table *python_table_new(const struct python_table_config *config)
{
	struct python_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cfg = *config;
	if (!t->cfg.find)
		t->cfg.find = find_interpreter;
	t->max = config->max_processes && config->max_processes < OTELPROF_MAX_TRACE_PROCS ? config->max_processes
											   : OTELPROF_MAX_TRACE_PROCS;
	t->slots = calloc(t->max, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return NULL;
	}
	return t;
}

void python_table_free(struct python_table *t)
{
	if (!t)
		return;
	free(t->slots);
	free(t);
}

static uint32_t *bucket(struct python_table *t, uint32_t pid)
{
	return &t->buckets[(pid * 2654435769u) >> 22];
}

#define for_each_in_bucket(t, pid, s)                                                               \
	for (struct slot *s = (t)->buckets[((pid) * 2654435769u) >> 22]                              \
				      ? &(t)->slots[(t)->buckets[((pid) * 2654435769u) >> 22] - 1] : NULL; \
	     s; s = s->next ? &(t)->slots[s->next - 1] : NULL)

/* By instance: a process that exec'd is a new program to check (its sample handled before the
 * exec record can have read /proc after the exec, and that entry is retired at the record). */
static struct slot *find_slot(const struct python_table *t, uint32_t pid, uint64_t start_ns, uint64_t instance)
{
	for_each_in_bucket(t, pid, s)
		if (s->e.pid == pid && s->e.start_ns == start_ns && s->e.instance == instance)
			return s;
	return NULL;
}

static void publish(struct python_table *t, struct python_entry *e, bool set)
{
	struct otelprof_python_proc bpf;
	int r;

	if (!t->cfg.publish || set == e->published)
		return;
	if (set)
		python_process_bpf_entry(&e->proc, &bpf);
	r = t->cfg.publish(t->cfg.publish_ctx, e->pid, e->start_ns, set ? &bpf : NULL);
	if (r && set)
		t->counters.map_failed++;
	e->published = set && !r;
}

const struct python_entry *python_table_check(struct python_table *t, uint32_t pid, uint64_t start_ns,
					      uint64_t instance, uint64_t nth)
{
	struct python_process proc;
	struct slot *s;
	uint32_t *head;
	int r;

	if (nth != 1 && nth != 8 && nth != 64 && nth != 512)
		return NULL;
	if (find_slot(t, pid, start_ns, instance))
		return NULL;
	t->counters.checks++;
	r = t->cfg.find(t->cfg.find_ctx, t->cfg.proc_root, pid, instance, &proc);
	if (r && r != -ENOTSUP)
		return NULL;
	if (t->n >= t->max) {
		t->counters.table_full++;
		return NULL;
	}
	s = &t->slots[t->n];
	*s = (struct slot){ .e = { .pid = pid, .start_ns = start_ns, .instance = instance, .proc = proc, .supported = !r } };
	head = bucket(t, pid);
	s->next = *head;
	*head = (uint32_t)++t->n;
	if (r) {
		t->counters.unsupported++;
		log_info("Process %u runs Python %u.%u, whose frames otelprofd cannot read: native frames only", pid,
			 proc.version_hex >> 24, (proc.version_hex >> 16) & 0xff);
		return NULL;
	}
	t->counters.found++;
	t->counters.debug_offsets += proc.debug_offsets;
	publish(t, &s->e, true);
	return &s->e;
}

const struct python_entry *python_table_find(const struct python_table *t, uint32_t pid, uint64_t start_ns,
					     uint64_t instance)
{
	struct slot *s = find_slot(t, pid, start_ns, instance);

	return s && s->e.supported ? &s->e : NULL;
}

void python_table_retire(struct python_table *t, uint32_t pid)
{
	for_each_in_bucket(t, pid, s) {
		if (s->e.pid == pid && !s->e.retired) {
			publish(t, &s->e, false);
			s->e.retired = true;
		}
	}
}

static void unlink_slot(struct python_table *t, size_t i)
{
	uint32_t *link = bucket(t, t->slots[i].e.pid);

	while (*link != i + 1)
		link = &t->slots[*link - 1].next;
	*link = t->slots[i].next;
}

void python_table_forget(struct python_table *t, uint32_t pid, uint64_t instance)
{
	for_each_in_bucket(t, pid, s) {
		size_t i = (size_t)(s - t->slots), last = t->n - 1;

		if (s->e.pid != pid || s->e.instance != instance)
			continue;
		publish(t, &s->e, false);
		unlink_slot(t, i);
		if (i != last) {
			unlink_slot(t, last);
			t->slots[i] = t->slots[last];
			t->slots[i].next = *bucket(t, t->slots[i].e.pid);
			*bucket(t, t->slots[i].e.pid) = (uint32_t)i + 1;
		}
		t->n--;
		return;
	}
}

size_t python_table_count(const struct python_table *t)
{
	return t->n;
}

const struct python_table_counters *python_table_counters(const struct python_table *t)
{
	return &t->counters;
}
