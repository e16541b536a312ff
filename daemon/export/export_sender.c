// SPDX-License-Identifier: Apache-2.0
#include "export/export_sender.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "clock.h"
#include "export/export_queue.h"
#include "log.h"

/* Failures of one kind since the last report. */
struct failure_log {
	uint64_t count;
	char last[256];
};

struct exporter {
	struct export_transport *transport;
	struct exporter_config cfg;
	pthread_t thread;
	bool thread_started;

	pthread_mutex_t lock;         /* guards everything below */
	pthread_cond_t wake;          /* queue changed or stopping */
	struct export_queue queue;
	bool stopping;                /* exporter_shutdown() called */
	uint64_t deadline_ns;         /* when stopping: give up at this time */
	struct exporter_stats stats;
	struct failure_log permanent, partial, retrying, gave_up;
	uint64_t rng;                 /* jitter */
};

/* xorshift64*: jitter only, no need for quality. */
static uint64_t next_random(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static void note(struct failure_log *f, const char *message)
{
	f->count++;
	snprintf(f->last, sizeof(f->last), "%s", message);
}

/* Wait on the condition until abs_ns (CLOCK_MONOTONIC) or a wake-up. Lock held. */
static void wait_until(struct exporter *e, uint64_t abs_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(abs_ns / 1000000000ULL), .tv_nsec = (long)(abs_ns % 1000000000ULL) };

	pthread_cond_timedwait(&e->wake, &e->lock, &ts);
}

/* Send one request until it is accepted, refused or out of time. Called without the lock. */
static void deliver(struct exporter *e, struct export_item *item)
{
	uint64_t first = clock_ns(CLOCK_MONOTONIC), backoff = e->cfg.initial_backoff_ns;
	struct export_result res;

	for (unsigned attempt = 0;; attempt++) {
		uint64_t timeout = e->cfg.timeout_ns, t = clock_ns(CLOCK_MONOTONIC), delay, wake_at;
		bool stopping;

		pthread_mutex_lock(&e->lock);
		stopping = e->stopping;
		if (stopping && t >= e->deadline_ns) {
			e->stats.dropped_shutdown++;
			e->stats.dropped_samples += item->nsamples;
			pthread_mutex_unlock(&e->lock);
			return;
		}
		if (stopping && e->deadline_ns - t < timeout)
			timeout = e->deadline_ns - t;
		e->stats.attempts++;
		if (attempt)
			e->stats.retries++;
		pthread_mutex_unlock(&e->lock);

		e->transport->send(e->transport, item->data, item->len, timeout, &res);

		pthread_mutex_lock(&e->lock);
		if (res.outcome == EXPORT_OK) {
			e->stats.sent++;
			e->stats.bytes_sent += item->len;
			e->stats.samples_sent += item->nsamples;
			if (res.rejected || *res.message) {
				e->stats.rejected_profiles += res.rejected > 0 ? (uint64_t)res.rejected : 0;
				note(&e->partial, *res.message ? res.message : "no message");
			}
			pthread_mutex_unlock(&e->lock);
			return;
		}
		if (res.outcome == EXPORT_PERMANENT) {
			e->stats.dropped_permanent++;
			e->stats.dropped_samples += item->nsamples;
			note(&e->permanent, res.message);
			pthread_mutex_unlock(&e->lock);
			return;
		}
		/* An attempt cut short by the shutdown deadline times out for that reason: it counts, but
		 * the reason shown stays the last full attempt's (refused, TLS...). */
		if (timeout < e->cfg.timeout_ns && *e->retrying.last)
			e->retrying.count++;
		else
			note(&e->retrying, res.message);
		/* Exponential backoff with full jitter in [backoff/2, backoff), the server's delay if longer. */
		delay = backoff / 2 + next_random(&e->rng) % (backoff / 2 + 1);
		if (res.retry_after_ns > delay)
			delay = res.retry_after_ns;
		backoff = backoff * 2 > e->cfg.max_backoff_ns ? e->cfg.max_backoff_ns : backoff * 2;
		t = clock_ns(CLOCK_MONOTONIC);
		wake_at = t + delay;
		if (wake_at - first > e->cfg.max_elapsed_ns || (e->stopping && wake_at >= e->deadline_ns)) {
			if (e->stopping && wake_at >= e->deadline_ns) {
				e->stats.dropped_shutdown++;
			} else {
				e->stats.dropped_retries++;
				note(&e->gave_up, res.message);
			}
			e->stats.dropped_samples += item->nsamples;
			pthread_mutex_unlock(&e->lock);
			return;
		}
		/* Sleep, but wake for a shutdown so its deadline is honoured. */
		while (clock_ns(CLOCK_MONOTONIC) < wake_at) {
			bool was_stopping = e->stopping;

			wait_until(e, wake_at);
			if (e->stopping && !was_stopping && wake_at >= e->deadline_ns)
				break;
		}
		pthread_mutex_unlock(&e->lock);
	}
}

static void *sender_main(void *arg)
{
	struct exporter *e = arg;
	struct export_item item;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		if (export_queue_pop(&e->queue, &item)) {
			pthread_mutex_unlock(&e->lock);
			deliver(e, &item);
			free(item.data);
			pthread_mutex_lock(&e->lock);
			continue;
		}
		if (e->stopping)
			break;
		pthread_cond_wait(&e->wake, &e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

struct exporter *exporter_new(struct export_transport *transport, const struct exporter_config *cfg)
{
	struct exporter *e = calloc(1, sizeof(*e));
	pthread_condattr_t attr;
	int r;

	if (!e) {
		transport->free(transport);
		errno = ENOMEM;
		return NULL;
	}
	e->transport = transport;
	e->cfg = *cfg;
	if (!e->cfg.initial_backoff_ns)
		e->cfg.initial_backoff_ns = 1000000000ULL;
	if (!e->cfg.max_backoff_ns)
		e->cfg.max_backoff_ns = 30000000000ULL;
	if (!e->cfg.max_elapsed_ns)
		e->cfg.max_elapsed_ns = 60000000000ULL;
	if (getrandom(&e->rng, sizeof(e->rng), GRND_NONBLOCK) != sizeof(e->rng) || !e->rng)
		e->rng = clock_ns(CLOCK_MONOTONIC) | 1;
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&e->wake, &attr);
	pthread_condattr_destroy(&attr);
	r = export_queue_init(&e->queue, cfg->queue_size, cfg->queue_bytes);
	if (!r)
		r = -pthread_create(&e->thread, NULL, sender_main, e);
	if (r) {
		exporter_free(e);
		errno = -r;
		return NULL;
	}
	e->thread_started = true;
	return e;
}

int exporter_enqueue(struct exporter *e, uint8_t *data, size_t len, uint64_t nsamples)
{
	uint64_t dropped;
	int r;

	pthread_mutex_lock(&e->lock);
	if (e->stopping) {
		e->stats.dropped_shutdown++;
		e->stats.dropped_samples += nsamples;
		pthread_mutex_unlock(&e->lock);
		free(data);
		return -ESHUTDOWN;
	}
	dropped = e->queue.dropped_samples;
	e->stats.enqueued++;
	r = export_queue_push(&e->queue, (struct export_item){ .data = data, .len = len, .nsamples = nsamples });
	e->stats.dropped_samples += e->queue.dropped_samples - dropped;
	pthread_cond_signal(&e->wake);
	pthread_mutex_unlock(&e->lock);
	return r;
}

int exporter_shutdown(struct exporter *e, uint64_t deadline_ns)
{
	int r = 0;

	if (!e || !e->thread_started)
		return 0;
	pthread_mutex_lock(&e->lock);
	e->stopping = true;
	e->deadline_ns = deadline_ns;
	pthread_cond_broadcast(&e->wake);
	pthread_mutex_unlock(&e->lock);
	/* The sender leaves when the queue is empty; every wait it makes ends by the deadline. */
	for (;;) {
		pthread_mutex_lock(&e->lock);
		if (clock_ns(CLOCK_MONOTONIC) >= deadline_ns && e->queue.count) {
			uint64_t before = e->queue.dropped_samples;
			size_t n = e->queue.count;

			export_queue_drop_all(&e->queue);
			e->queue.dropped -= n; /* counted as shutdown drops, not queue-full ones */
			e->stats.dropped_shutdown += n;
			e->stats.dropped_samples += e->queue.dropped_samples - before;
			r = -ETIMEDOUT;
		}
		pthread_mutex_unlock(&e->lock);
		if (!pthread_tryjoin_np(e->thread, NULL))
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 5000000 }, NULL);
	}
	e->thread_started = false;
	pthread_mutex_lock(&e->lock);
	if (e->stats.dropped_shutdown)
		r = -ETIMEDOUT;
	pthread_mutex_unlock(&e->lock);
	return r;
}

void exporter_free(struct exporter *e)
{
	if (!e)
		return;
	if (e->thread_started)
		exporter_shutdown(e, clock_ns(CLOCK_MONOTONIC));
	export_queue_destroy(&e->queue);
	pthread_cond_destroy(&e->wake);
	pthread_mutex_destroy(&e->lock);
	if (e->transport)
		e->transport->free(e->transport);
	free(e);
}

void exporter_get_stats(struct exporter *e, struct exporter_stats *out)
{
	pthread_mutex_lock(&e->lock);
	*out = e->stats;
	out->dropped_queue_full = e->queue.dropped;
	out->queued = e->queue.count;
	out->queued_bytes = e->queue.bytes;
	pthread_mutex_unlock(&e->lock);
}

void exporter_report(struct exporter *e)
{
	struct failure_log permanent, partial, retrying, gave_up;
	const char *name = e->transport->name;

	pthread_mutex_lock(&e->lock);
	permanent = e->permanent;
	partial = e->partial;
	retrying = e->retrying;
	gave_up = e->gave_up;
	e->permanent.count = e->partial.count = e->retrying.count = e->gave_up.count = 0;
	pthread_mutex_unlock(&e->lock);

	if (permanent.count)
		log_error("The collector refused %" PRIu64 " request%s (%s), dropped: %s", permanent.count,
			  permanent.count == 1 ? "" : "s", name, permanent.last);
	if (partial.count)
		log_warn("The collector accepted %" PRIu64 " request%s only in part: %s", partial.count,
			 partial.count == 1 ? "" : "s", partial.last);
	if (gave_up.count)
		log_error("Gave up on %" PRIu64 " request%s after retrying (%s): %s", gave_up.count,
			  gave_up.count == 1 ? "" : "s", name, gave_up.last);
	else if (retrying.count)
		log_warn("Collector unavailable, %" PRIu64 " attempt%s failed (%s), retrying: %s", retrying.count,
			 retrying.count == 1 ? "" : "s", name, retrying.last);
}
