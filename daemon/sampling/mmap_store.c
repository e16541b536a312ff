// SPDX-License-Identifier: Apache-2.0
#include "sampling/mmap_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum ev_kind { EV_FORK, EV_EXEC, EV_EXIT, EV_MAP };

struct ev {
	uint64_t time;
	enum ev_kind kind;
	uint32_t parent;          /* EV_FORK */
	struct mmap_store_map m;  /* EV_MAP; m.path owned */
};

struct pid_hist {
	uint32_t pid;
	uint64_t last_ns;  /* time of its newest event */
	uint64_t exit_ns;  /* its last process's exit, 0: alive (or not seen to exit) */
	uint64_t gap_ns;   /* time of its newest event not kept (no memory, path bytes, full): a
			      program running then has an incomplete history */
	struct ev *evs;    /* time order */
	size_t n, cap;
	struct pid_hist *next;
};

struct mmap_store {
	struct pid_hist *buckets[MMAP_STORE_BUCKETS];
	uint64_t lost_ns;  /* time of the latest loss */
	struct mmap_store_counters c;
};

struct mmap_store *mmap_store_new(void)
{
	return calloc(1, sizeof(struct mmap_store));
}

static void ev_release(struct mmap_store *st, struct ev *e)
{
	if (e->kind == EV_MAP && e->m.path) {
		st->c.path_bytes -= strlen(e->m.path) + 1;
		free((char *)e->m.path);
		e->m.path = NULL;
	}
}

static void hist_free(struct mmap_store *st, struct pid_hist *h)
{
	for (size_t i = 0; i < h->n; i++)
		ev_release(st, &h->evs[i]);
	free(h->evs);
	free(h);
	st->c.pids--;
}

void mmap_store_free(struct mmap_store *st)
{
	if (!st)
		return;
	for (size_t b = 0; b < MMAP_STORE_BUCKETS; b++)
		while (st->buckets[b]) {
			struct pid_hist *h = st->buckets[b];

			st->buckets[b] = h->next;
			hist_free(st, h);
		}
	free(st);
}

static struct pid_hist **hist_slot(struct mmap_store *st, uint32_t pid)
{
	struct pid_hist **pp = &st->buckets[pid % MMAP_STORE_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

/* The pid whose history goes to make room: an exited one first, the oldest. */
static void evict_one(struct mmap_store *st)
{
	struct pid_hist **victim = NULL;

	for (size_t b = 0; b < MMAP_STORE_BUCKETS; b++)
		for (struct pid_hist **pp = &st->buckets[b]; *pp; pp = &(*pp)->next) {
			const struct pid_hist *h = *pp, *v = victim ? *victim : NULL;

			if (!v || (!!h->exit_ns > !!v->exit_ns) ||
			    (!!h->exit_ns == !!v->exit_ns && h->last_ns < v->last_ns))
				victim = pp;
		}
	if (victim) {
		struct pid_hist *h = *victim;

		*victim = h->next;
		hist_free(st, h);
		st->c.pids_dropped++;
	}
}

static struct pid_hist *hist_get(struct mmap_store *st, uint32_t pid, bool create)
{
	struct pid_hist **slot = hist_slot(st, pid), *h;

	if (*slot || !create)
		return *slot;
	if (st->c.pids >= MMAP_STORE_PIDS) {
		evict_one(st);
		slot = hist_slot(st, pid); /* the victim may have been before it in the chain */
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->pid = pid;
	*slot = h;
	st->c.pids++;
	return h;
}

/* An event of h at time was not kept: what h's program did then is not whole. */
static void gap_at(struct pid_hist *h, uint64_t time)
{
	if (time > h->gap_ns)
		h->gap_ns = time;
}

/* e added to pid's history in time order (the oldest dropped when full). False: not added (e's
 * path, if any, stays the caller's). */
static bool add(struct mmap_store *st, uint32_t pid, const struct ev *e)
{
	struct pid_hist *h = hist_get(st, pid, true);
	size_t at;

	if (!h) {
		st->c.events_dropped++;
		return false;
	}
	if (h->n == MMAP_STORE_PER_PID) {
		if (e->time < h->evs[0].time) {
			st->c.events_dropped++;
			gap_at(h, e->time);
			return false;
		}
		ev_release(st, &h->evs[0]);
		memmove(h->evs, h->evs + 1, (h->n - 1) * sizeof(*h->evs));
		h->n--;
		st->c.events_dropped++;
	}
	if (h->n == h->cap) {
		size_t ncap = h->cap ? h->cap * 2 : 8;
		struct ev *nv = realloc(h->evs, ncap * sizeof(*nv));

		if (!nv) {
			st->c.events_dropped++;
			gap_at(h, e->time);
			return false;
		}
		h->evs = nv;
		h->cap = ncap;
	}
	for (at = h->n; at && h->evs[at - 1].time > e->time; at--)
		;
	memmove(h->evs + at + 1, h->evs + at, (h->n - at) * sizeof(*h->evs));
	h->evs[at] = *e;
	h->n++;
	if (e->time > h->last_ns)
		h->last_ns = e->time;
	if (e->kind == EV_EXIT && e->time > h->exit_ns)
		h->exit_ns = e->time;
	else if (e->kind == EV_FORK && e->time > h->exit_ns)
		h->exit_ns = 0; /* a new process at the pid: alive */
	st->c.events++;
	return true;
}

void mmap_store_fork(struct mmap_store *st, uint32_t pid, uint32_t parent, uint64_t time)
{
	add(st, pid, &(struct ev){ .time = time, .kind = EV_FORK, .parent = parent });
}

void mmap_store_exec(struct mmap_store *st, uint32_t pid, uint64_t time)
{
	add(st, pid, &(struct ev){ .time = time, .kind = EV_EXEC });
}

void mmap_store_exit(struct mmap_store *st, uint32_t pid, uint64_t time)
{
	/* Only a pid with a history: an exit alone answers nothing. */
	if (hist_get(st, pid, false))
		add(st, pid, &(struct ev){ .time = time, .kind = EV_EXIT });
}

void mmap_store_map(struct mmap_store *st, uint32_t pid, const struct mmap_store_map *m, uint64_t time)
{
	size_t len = strlen(m->path) + 1;
	struct ev e = { .time = time, .kind = EV_MAP, .m = *m };

	if (st->c.path_bytes + len > MMAP_STORE_PATH_BYTES || !(e.m.path = strdup(m->path))) {
		struct pid_hist *h = hist_get(st, pid, false);

		if (h)
			gap_at(h, time);
		st->c.paths_dropped++;
		return;
	}
	st->c.path_bytes += len;
	if (!add(st, pid, &e)) {
		st->c.path_bytes -= len;
		free((char *)e.m.path);
	}
}

bool mmap_store_has(struct mmap_store *st, uint32_t pid)
{
	return hist_get(st, pid, false) != NULL;
}

void mmap_store_lost(struct mmap_store *st, uint64_t time)
{
	if (time > st->lost_ns)
		st->lost_ns = time;
}

void mmap_store_expire(struct mmap_store *st, uint64_t now)
{
	for (size_t b = 0; b < MMAP_STORE_BUCKETS; b++)
		for (struct pid_hist **pp = &st->buckets[b]; *pp;) {
			struct pid_hist *h = *pp;

			if (h->exit_ns && h->exit_ns >= h->last_ns && now > h->exit_ns + MMAP_STORE_KEEP_NS) {
				*pp = h->next;
				hist_free(st, h);
				st->c.expired++;
			} else {
				pp = &h->next;
			}
		}
}

static bool overlaps(const struct mmap_store_map *a, const struct mmap_store_map *b)
{
	return a->start < b->start + b->len && b->start < a->start + a->len;
}

/* The fork event of the instance that started at start_ns (the closest within the slack), or -1. */
static long find_fork(const struct pid_hist *h, uint64_t start_ns)
{
	uint64_t best_d = UINT64_MAX;
	long best = -1;

	for (size_t i = 0; i < h->n; i++) {
		const struct ev *e = &h->evs[i];
		uint64_t d;

		if (e->kind != EV_FORK)
			continue;
		/* Clocks read apart may put the fork a hair before the start. */
		if (e->time + 1000000ULL < start_ns || e->time > start_ns + MMAP_STORE_FORK_SLACK_NS)
			continue;
		d = e->time > start_ns ? e->time - start_ns : start_ns - e->time;
		if (d < best_d) {
			best_d = d;
			best = (long)i;
		}
	}
	return best;
}

int mmap_store_lookup(struct mmap_store *st, uint32_t pid, uint64_t start_ns, uint64_t time_ns,
		      struct mmap_store_map *out, size_t max, size_t *n, uint32_t *parent,
		      enum mmap_store_whole *whole)
{
	struct pid_hist *h = hist_get(st, pid, false);
	bool all = true;
	size_t first, gen;
	long fork;

	*n = 0;
	if (whole)
		*whole = MMAP_STORE_GAP;
	if (!start_ns || !time_ns)
		return -EINVAL;
	fork = h ? find_fork(h, start_ns) : -1;
	if (fork < 0) {
		st->c.not_found++;
		return -ENOENT;
	}
	if (st->lost_ns >= h->evs[fork].time) {
		st->c.untrusted++;
		return -ESTALE;
	}
	*parent = h->evs[fork].parent;
	/* Its program at time_ns: since its last exec before then (and before the pid's next fork). */
	for (gen = (size_t)fork, first = gen + 1;
	     first < h->n && h->evs[first].kind != EV_FORK && h->evs[first].time <= time_ns; first++)
		if (h->evs[first].kind == EV_EXEC)
			gen = first; /* else the fork's: the program it inherited (an exec after time_ns is not it) */
	/* The program's mappings, all of them (made before or after time_ns: an instance's mappings are
	 * taken once, at its first record, and serve its later ones), until its next exec or the pid's
	 * next process. */
	for (size_t i = gen; i < h->n; i++) {
		const struct ev *e = &h->evs[i];
		size_t kept = 0;

		if (i > gen && (e->kind == EV_EXEC || e->kind == EV_FORK))
			break;
		if (e->kind != EV_MAP)
			continue;
		/* A mapping made over others replaces them. */
		for (size_t j = 0; j < *n; j++)
			if (!overlaps(&out[j], &e->m))
				out[kept++] = out[j];
		*n = kept;
		if (*n < max)
			out[(*n)++] = e->m;
		else
			all = false;
	}
	st->c.found++;
	/* Whole: the program began with an exec seen (a child that never exec'd runs what it inherited,
	 * never reported), and no event of the pid was let go since, nor any mapping left out here. */
	if (whole && h->evs[gen].kind != EV_EXEC) {
		*whole = MMAP_STORE_INHERITED;
	} else if (whole && all && h->gap_ns < h->evs[gen].time) {
		*whole = MMAP_STORE_WHOLE;
		st->c.whole++;
	}
	return 0;
}

void mmap_store_counters(const struct mmap_store *st, struct mmap_store_counters *out)
{
	*out = st->c;
}
