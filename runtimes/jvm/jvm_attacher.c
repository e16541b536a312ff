// SPDX-License-Identifier: Apache-2.0
#include "jvm_attacher.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jvm_attach.h"
#include "jvm_broker.h"

struct request {
	pid_t pid;
	uint64_t start_ns;
};

struct known {
	pid_t pid;           /* 0: a free slot */
	uint64_t start_ns;
	bool jvm;
	uint64_t next_ms;    /* no perf map asked before then */
	uint64_t last_seen_ms;
};

struct jvm_attacher {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	struct request queue[RUNTIME_JVM_QUEUE];
	unsigned head, count;
	struct jvm_attacher_counters counters; /* under lock */
	unsigned refresh_ms;
	struct jvm_broker *broker;             /* borrowed; NULL: attach from this thread */
	struct known known[RUNTIME_JVM_TABLE]; /* the thread's alone */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The table's slot of (pid, start_ns): found, or a new one (a free slot, else the least recently
 * seen, counted as forgotten). */
static struct known *known_slot(struct jvm_attacher *a, const struct request *r, bool *added)
{
	struct known *oldest = &a->known[0];

	*added = false;
	for (size_t i = 0; i < RUNTIME_JVM_TABLE; i++) {
		struct known *k = &a->known[i];

		if (k->pid == r->pid && k->start_ns == r->start_ns)
			return k;
		if (!k->pid || (oldest->pid && k->last_seen_ms < oldest->last_seen_ms))
			oldest = k;
	}
	if (oldest->pid) {
		pthread_mutex_lock(&a->lock);
		a->counters.table_full++;
		pthread_mutex_unlock(&a->lock);
	}
	memset(oldest, 0, sizeof(*oldest));
	oldest->pid = r->pid;
	oldest->start_ns = r->start_ns;
	*added = true;
	return oldest;
}

/* Without a broker: as the daemon's own user, from this thread. */
static int attach_here(pid_t pid)
{
	struct jvm_attach_target t;
	int r = jvm_attach_target_open(pid, &t);

	if (!r)
		r = jvm_attach_perfmap(&t, RUNTIME_JVM_ATTACH_TIMEOUT_MS);
	jvm_attach_target_close(&t);
	return r;
}

static void handle(struct jvm_attacher *a, const struct request *r)
{
	uint64_t now = now_ms();
	bool added;
	struct known *k = known_slot(a, r, &added);
	uint64_t *counter;
	int rc;

	k->last_seen_ms = now;
	if (added) {
		k->jvm = jvm_attach_is_hotspot(r->pid);
		if (k->jvm) {
			pthread_mutex_lock(&a->lock);
			a->counters.jvms++;
			pthread_mutex_unlock(&a->lock);
		}
	}
	if (!k->jvm || now < k->next_ms)
		return;
	k->next_ms = now + a->refresh_ms;
	/* -ENOTSUP (no SIGQUIT handler: a JVM still starting, or run with -Xrs) is tried again at the
	 * next period, never signalled meanwhile. */
	rc = a->broker ? jvm_broker_attach(a->broker, r->pid) : attach_here(r->pid);
	pthread_mutex_lock(&a->lock);
	switch (rc) {
	case 0: counter = &a->counters.perf_maps; break;
	case -ENOTSUP: counter = &a->counters.not_attachable; break;
	case -EBUSY: counter = &a->counters.rate_limited; break;
	case -ETIMEDOUT: counter = &a->counters.timed_out; break;
	case -EPIPE: counter = &a->counters.broker_lost; break;
	default: counter = &a->counters.failed; break;
	}
	(*counter)++;
	if (rc == -EBUSY)
		k->next_ms = now; /* not asked: asked at its next sample instead */
	pthread_mutex_unlock(&a->lock);
}

static void *run(void *arg)
{
	struct jvm_attacher *a = arg;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		struct request r;

		while (!a->stop && !a->count)
			pthread_cond_wait(&a->wake, &a->lock);
		if (a->stop)
			break;
		r = a->queue[a->head];
		a->head = (a->head + 1) % RUNTIME_JVM_QUEUE;
		a->count--;
		pthread_mutex_unlock(&a->lock);
		handle(a, &r);
		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

struct jvm_attacher *jvm_attacher_new(unsigned refresh_ms, struct jvm_broker *broker)
{
	struct jvm_attacher *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->refresh_ms = refresh_ms;
	a->broker = broker;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->wake, NULL);
	if (pthread_create(&a->thread, NULL, run, a)) {
		pthread_cond_destroy(&a->wake);
		pthread_mutex_destroy(&a->lock);
		free(a);
		return NULL;
	}
	return a;
}

void jvm_attacher_free(struct jvm_attacher *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_signal(&a->wake);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	pthread_cond_destroy(&a->wake);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

void jvm_attacher_seen(struct jvm_attacher *a, pid_t pid, uint64_t start_ns)
{
	pthread_mutex_lock(&a->lock);
	if (a->count == RUNTIME_JVM_QUEUE) {
		a->counters.queue_full++;
	} else {
		a->queue[(a->head + a->count) % RUNTIME_JVM_QUEUE] = (struct request){ pid, start_ns };
		a->count++;
		pthread_cond_signal(&a->wake);
	}
	pthread_mutex_unlock(&a->lock);
}

void jvm_attacher_counters(struct jvm_attacher *a, struct jvm_attacher_counters *out)
{
	pthread_mutex_lock(&a->lock);
	*out = a->counters;
	pthread_mutex_unlock(&a->lock);
}
