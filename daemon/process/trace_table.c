// SPDX-License-Identifier: Apache-2.0
#include "process/trace_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "process/thread_ctx.h"
#include "profile/aggregate.h"

#define NS_PER_S 1000000000ULL
/* Looking for a thread context variable not found yet: first after 1 s, doubling up to 64 s. */
#define RESOLVE_FIRST_NS NS_PER_S
#define RESOLVE_MAX_NS (64 * NS_PER_S)
/* A key missing from the map reads the context again at most this often. */
#define KEY_REREAD_NS NS_PER_S

const char *const trace_reject_names[TRACE_REJECT_MAX] = {
	"context_malformed", "context_too_big", "context_torn", "record_malformed", "attrs_oversized",
	"unknown_key", "bad_utf8", "incomplete_entry", "no_process",
};

struct entry {
	uint32_t pid;
	uint64_t start_ns, instance;
	struct process_ctx *ctx;     /* never NULL */
	bool retired;                /* exec'd or exited: no longer in the BPF map */
	bool resolved;               /* in the BPF map */
	uint64_t resolve_at, resolve_backoff; /* next look for the variable (ctx->thread_ctx, not resolved) */
	uint64_t reread_at;          /* earliest re-read for an unknown key */
	uint32_t next;               /* index + 1 of the next entry of its bucket (0: none) */
};

/* A process without a context, and when to look again. */
struct probe {
	uint32_t pid, map_count; /* map_count at the last look */
	uint64_t start_ns, instance, next; /* instance: an exec keeps pid and start_ns */
};

struct trace_table {
	struct trace_table_config cfg;
	struct probe probes[TRACE_PROBE_SLOTS];
	uint64_t budget_second;      /* the second (now / 1e9) the budget counts */
	unsigned budget_used;
	struct entry *entries;       /* dense: [0, n) */
	size_t n, max;
	/* Entries by pid: index + 1 of each bucket's first entry (0: none), at least twice max buckets
	 * so that chains stay short (a pid's entries share one: the live one and those retired). */
	uint32_t *buckets;
	unsigned bucket_shift;       /* 32 - log2(buckets) */
	struct trace_table_counters counters;
};

static int read_context(void *ctx, const char *proc_root, uint32_t pid, struct process_ctx **out)
{
	(void)ctx;
	return process_ctx_read(proc_root, pid, out);
}

static int resolve_thread(void *ctx, const char *proc_root, uint32_t pid, struct otelprof_trace_proc *out)
{
	(void)ctx;
	return thread_ctx_resolve(proc_root, pid, out);
}

struct trace_table *trace_table_new(const struct trace_table_config *config)
{
	struct trace_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cfg = *config;
	if (!t->cfg.read_context)
		t->cfg.read_context = read_context;
	if (!t->cfg.resolve_thread)
		t->cfg.resolve_thread = resolve_thread;
	t->max = config->max_processes && config->max_processes < OTELPROF_MAX_TRACE_PROCS ? config->max_processes
											   : OTELPROF_MAX_TRACE_PROCS;
	t->bucket_shift = 32;
	while ((1ull << (32 - t->bucket_shift)) < 2 * t->max)
		t->bucket_shift--;
	t->entries = calloc(t->max, sizeof(*t->entries));
	t->buckets = calloc(1ull << (32 - t->bucket_shift), sizeof(*t->buckets));
	if (!t->entries || !t->buckets) {
		trace_table_free(t);
		return NULL;
	}
	return t;
}

void trace_table_free(struct trace_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; t->entries && i < t->n; i++)
		process_ctx_free(t->entries[i].ctx);
	free(t->entries);
	free(t->buckets);
	free(t);
}

static uint32_t *bucket(const struct trace_table *t, uint32_t pid)
{
	/* Fibonacci hashing: the high bits of pid times 2^32 / phi spread consecutive pids. */
	return &t->buckets[(uint32_t)(pid * 2654435769u) >> t->bucket_shift];
}

/* Each entry e of pid's bucket (entries of other pids too: the caller compares). */
#define for_each_in_bucket(t, pid, e)                                                               \
	for (struct entry *e = *bucket(t, pid) ? &(t)->entries[*bucket(t, pid) - 1] : NULL; e;     \
	     e = e->next ? &(t)->entries[e->next - 1] : NULL)

static void bucket_add(struct trace_table *t, size_t i)
{
	uint32_t *head = bucket(t, t->entries[i].pid);

	t->entries[i].next = *head;
	*head = (uint32_t)i + 1;
}

static void bucket_remove(struct trace_table *t, size_t i)
{
	uint32_t *link = bucket(t, t->entries[i].pid);

	while (*link != i + 1)
		link = &t->entries[*link - 1].next;
	*link = t->entries[i].next;
}

/* Insert a copy of *e (the caller checked t->n < t->max): the entry in the table. */
static struct entry *insert(struct trace_table *t, const struct entry *e)
{
	t->entries[t->n] = *e;
	bucket_add(t, t->n);
	return &t->entries[t->n++];
}

/* Remove entry i, moving the last one into its place. */
static void remove_at(struct trace_table *t, size_t i)
{
	size_t last = t->n - 1;

	process_ctx_free(t->entries[i].ctx);
	bucket_remove(t, i);
	if (i != last) {
		bucket_remove(t, last);
		t->entries[i] = t->entries[last];
		bucket_add(t, i);
	}
	t->n--;
}

/* Whether (pid, instance) has an entry: a retired one, for find() skips those. */
static bool has_instance(struct trace_table *t, uint32_t pid, uint64_t instance)
{
	for_each_in_bucket(t, pid, e)
		if (e->pid == pid && e->instance == instance)
			return true;
	return false;
}

/* The live entry of (pid, start_ns), or NULL. */
static struct entry *find(struct trace_table *t, uint32_t pid, uint64_t start_ns)
{
	for_each_in_bucket(t, pid, e)
		if (e->pid == pid && e->start_ns == start_ns && !e->retired)
			return e;
	return NULL;
}

static void publish(struct trace_table *t, struct entry *e, const struct otelprof_trace_proc *tp)
{
	int r = t->cfg.publish ? t->cfg.publish(t->cfg.publish_ctx, e->pid, tp) : 0;

	if (r && tp)
		t->counters.map_failed++;
	e->resolved = tp && !r;
}

static void resolve(struct trace_table *t, struct entry *e, uint64_t now)
{
	struct otelprof_trace_proc tp;

	if (!e->ctx->thread_ctx || e->resolved || e->retired)
		return;
	if (t->cfg.resolve_thread(t->cfg.source_ctx, t->cfg.proc_root, e->pid, &tp)) {
		e->resolve_backoff = e->resolve_backoff ? e->resolve_backoff * 2 : RESOLVE_FIRST_NS;
		if (e->resolve_backoff > RESOLVE_MAX_NS)
			e->resolve_backoff = RESOLVE_MAX_NS;
		e->resolve_at = now + e->resolve_backoff;
		return;
	}
	tp.start_ns = e->start_ns;
	publish(t, e, &tp);
	if (e->resolved) {
		t->counters.threads_resolved++;
		log_debug("pid %u: its threads' context variable is found: samples carry their span", e->pid);
	}
}

static void count_read_error(struct trace_table *t, int r)
{
	if (r == -EBADMSG)
		t->counters.rejected[TRACE_REJECT_CONTEXT_MALFORMED]++;
	else if (r == -EFBIG)
		t->counters.rejected[TRACE_REJECT_CONTEXT_TOO_BIG]++;
	else if (r == -EAGAIN)
		t->counters.rejected[TRACE_REJECT_CONTEXT_TORN]++;
}

void trace_table_check(struct trace_table *t, uint32_t pid, uint64_t start_ns, uint64_t instance,
		       uint32_t map_count, bool force, uint64_t now)
{
	struct entry *e = find(t, pid, start_ns);
	struct probe *pr = &t->probes[pid % TRACE_PROBE_SLOTS];
	struct process_ctx *ctx;
	int r;

	if (e && !force)
		return;
	/* A sample handled after its program's exec or exit: a new entry would duplicate the retired
	 * one, and trace_table_forget() would leave the copy holding a slot for good. */
	if (!e && has_instance(t, pid, instance))
		return;
	if (!force) {
		/* Same mappings: no new context can have been published since the last look. */
		if (pr->pid == pid && pr->start_ns == start_ns && pr->instance == instance &&
		    (pr->map_count == map_count || now < pr->next))
			return;
		if (now / NS_PER_S != t->budget_second) {
			t->budget_second = now / NS_PER_S;
			t->budget_used = 0;
		}
		if (t->budget_used >= TRACE_CHECKS_PER_SECOND) {
			t->counters.checks_deferred++;
			return;
		}
		t->budget_used++;
		*pr = (struct probe){ .pid = pid, .map_count = map_count, .start_ns = start_ns,
				      .instance = instance, .next = now + TRACE_RECHECK_NS };
	}
	r = t->cfg.read_context(t->cfg.source_ctx, t->cfg.proc_root, pid, &ctx);
	if (r) {
		count_read_error(t, r);
		return;
	}
	t->counters.contexts_read++;
	if (e) {
		/* An update: the key map only grows, the variable stays where it was. */
		process_ctx_free(e->ctx);
		e->ctx = ctx;
		resolve(t, e, now);
		return;
	}
	if (t->n >= t->max) {
		t->counters.table_full++;
		process_ctx_free(ctx);
		return;
	}
	e = insert(t, &(struct entry){ .pid = pid, .start_ns = start_ns, .instance = instance, .ctx = ctx });
	log_debug("pid %u: process context found (%zu resource attributes%s)", pid, ctx->nattrs,
		  ctx->thread_ctx ? ", threads publish their span" : "");
	resolve(t, e, now);
}

void trace_table_tick(struct trace_table *t, uint64_t now)
{
	for (size_t i = 0; i < t->n; i++) {
		struct entry *e = &t->entries[i];

		if (e->ctx->thread_ctx && !e->resolved && !e->retired && now >= e->resolve_at)
			resolve(t, e, now);
	}
}

void trace_table_retire(struct trace_table *t, uint32_t pid)
{
	for_each_in_bucket(t, pid, e) {
		if (e->pid != pid || e->retired)
			continue;
		if (e->resolved)
			publish(t, e, NULL);
		e->retired = true;
	}
}

void trace_table_forget(struct trace_table *t, uint32_t pid, uint64_t instance)
{
	for_each_in_bucket(t, pid, e) {
		if (e->pid != pid || e->instance != instance)
			continue;
		if (e->resolved && !e->retired)
			publish(t, e, NULL);
		remove_at(t, (size_t)(e - t->entries));
		return;
	}
}

/* Name of key k, reading the context again (at most once a second) when the map does not have it. */
static const char *key_name(struct trace_table *t, struct entry **e, uint8_t k, uint64_t now)
{
	uint32_t pid = (*e)->pid;
	uint64_t start_ns = (*e)->start_ns;

	if (k < (*e)->ctx->nkeys && (*e)->ctx->keys[k] && *(*e)->ctx->keys[k])
		return (*e)->ctx->keys[k];
	if (now < (*e)->reread_at)
		return NULL;
	(*e)->reread_at = now + KEY_REREAD_NS;
	trace_table_check(t, pid, start_ns, (*e)->instance, 0, true, now);
	*e = find(t, pid, start_ns);
	return *e && k < (*e)->ctx->nkeys && (*e)->ctx->keys[k] && *(*e)->ctx->keys[k] ? (*e)->ctx->keys[k] : NULL;
}

size_t trace_table_link(struct trace_table *t, uint32_t pid, uint64_t start_ns, const struct otelprof_trace_ctx *tc,
			uint8_t *link, uint64_t now)
{
	static const uint8_t zero[AGG_LINK_IDS];
	struct entry *e = find(t, pid, start_ns);
	/* Offset + 1 in tc->attrs of each key's last entry (0: none). */
	uint16_t last[256] = { 0 };
	size_t len = AGG_LINK_IDS;

	if (!e) {
		t->counters.rejected[TRACE_REJECT_NO_PROCESS]++;
		return 0;
	}
	/* The BPF program sends valid records only: anything else is not one of its records. */
	if (tc->valid != 1 || tc->attrs_copied > OTELPROF_TRACE_ATTRS_MAX || tc->attrs_copied > tc->attrs_size) {
		t->counters.rejected[TRACE_REJECT_RECORD_MALFORMED]++;
		return 0;
	}
	memcpy(link, tc->trace_id, 16);
	memcpy(link + 16, tc->span_id, 8);
	if (!memcmp(link, zero, AGG_LINK_IDS))
		return 0; /* zeros: no span active */
	t->counters.samples_linked++;
	if (tc->attrs_size > tc->attrs_copied) {
		t->counters.rejected[TRACE_REJECT_ATTRS_OVERSIZED]++;
		return len;
	}
	for (size_t i = 0; i < tc->attrs_copied;) {
		if (tc->attrs_copied - i < 2 || tc->attrs_copied - i - 2 < tc->attrs[i + 1]) {
			t->counters.rejected[TRACE_REJECT_INCOMPLETE_ENTRY]++;
			break;
		}
		last[tc->attrs[i]] = (uint16_t)(i + 1);
		i += 2 + tc->attrs[i + 1];
	}
	for (unsigned k = 0; k < 256; k++) {
		const uint8_t *entry;
		const char *name;
		size_t key_len, value_len;

		if (!last[k])
			continue;
		entry = &tc->attrs[last[k] - 1];
		value_len = entry[1];
		name = key_name(t, &e, (uint8_t)k, now);
		if (!e)
			return len;
		if (!name) {
			t->counters.rejected[TRACE_REJECT_UNKNOWN_KEY]++;
			continue;
		}
		if (!utf8_valid((const char *)entry + 2, value_len) || memchr(entry + 2, 0, value_len)) {
			t->counters.rejected[TRACE_REJECT_BAD_UTF8]++;
			continue;
		}
		key_len = strlen(name);
		if (len + key_len + value_len + 2 > AGG_LINK_MAX) {
			t->counters.rejected[TRACE_REJECT_ATTRS_OVERSIZED]++;
			break;
		}
		memcpy(link + len, name, key_len + 1);
		len += key_len + 1;
		memcpy(link + len, entry + 2, value_len);
		len += value_len;
		link[len++] = 0;
	}
	return len;
}

const struct process_ctx *trace_table_context(const struct trace_table *t, uint32_t pid, uint64_t instance)
{
	for_each_in_bucket(t, pid, e)
		if (e->pid == pid && e->instance == instance)
			return e->ctx;
	return NULL;
}

size_t trace_table_count(const struct trace_table *t)
{
	return t->n;
}

const struct trace_table_counters *trace_table_counters(const struct trace_table *t)
{
	return &t->counters;
}
