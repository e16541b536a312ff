// SPDX-License-Identifier: Apache-2.0
#include "export/export_loop.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "clock.h"
#include "export/export_sender.h"
#include "export/export_transport.h"
#include "log.h"
#include "output/otlp_encode.h"
#include "parse.h"

/* Profiles waiting for the encoder: one being encoded and one more; a third (an encoder that fell
 * behind by two intervals) is dropped, counted. */
#define ENCODE_QUEUE_MAX 2

/*
 * The main thread hands each interval's profile over (export_loop_submit); the encoder thread turns
 * it into requests for the exporter. Encoding took 60-130 ms of CPU for a busy host's profile, a
 * loop turn the signals and the deadline waited for.
 */
struct export_loop {
	const struct export_config *cfg;
	struct exporter *exporter;
	pthread_t encoder;
	bool encoder_started;
	pthread_mutex_t lock;          /* the fields below */
	pthread_cond_t wake;
	struct profile *queue[ENCODE_QUEUE_MAX];
	size_t queued;
	bool stopping;
	void (*encoded)(void);         /* called by the encoder after each profile is freed, or NULL */
	void (*at_peak)(void);         /* called by the encoder with a profile and its requests both in
					  memory, or NULL */
	uint64_t intervals;
	uint64_t dropped_too_large; /* samples of processes larger than max_message_size alone */
	uint64_t dropped_unencoded; /* samples of profiles dropped while the encoder was behind */
};

static void loop_free(struct export_loop *l)
{
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

struct export_loop *export_loop_new(const struct export_config *cfg)
{
	struct export_loop *l = calloc(1, sizeof(*l));
	struct export_transport *t;
	sigset_t all, old;
	char why[256] = "", shown[512];
	int err = 0;

	if (!l) {
		log_error("Out of memory");
		return NULL;
	}
	l->cfg = cfg;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->wake, NULL);
	/*
	 * Threads inherit the signal mask: the sender's and gRPC's must never take SIGTERM or SIGINT,
	 * which the main thread reads from its signalfd. Block everything while they are created.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	t = cfg->protocol == EXPORT_PROTOCOL_HTTP ? export_http_new(cfg, &err, why, sizeof(why))
						  : export_grpc_new(cfg, &err, why, sizeof(why));
	if (t)
		l->exporter = exporter_new(t, &(struct exporter_config){
			.queue_size = cfg->queue_size, .queue_bytes = cfg->queue_bytes, .timeout_ns = cfg->timeout_ns,
		});
	if (t && !l->exporter)
		err = -errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!t) {
		log_error("%s", why);
		loop_free(l);
		errno = -err;
		return NULL;
	}
	if (!l->exporter) {
		log_error("Failed to start the exporter: %s", strerror(-err));
		loop_free(l);
		return NULL;
	}
	log_info("Exporting OTLP profiles to %s over %s%s every %.1fs",
		 parse_redact_url(cfg->url ? cfg->url : cfg->target, shown, sizeof(shown)),
		 cfg->protocol == EXPORT_PROTOCOL_HTTP ? "HTTP" : "gRPC", cfg->tls ? " with TLS" : "",
		 (double)cfg->interval_ns / 1e9);
	return l;
}

uint64_t export_loop_next_interval_ns(struct export_loop *l)
{
	uint64_t r = 0, tenth = l->cfg->interval_ns / 10;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = clock_ns(CLOCK_MONOTONIC);
	return l->cfg->interval_ns - tenth + (tenth ? r % (2 * tenth + 1) : 0);
}

/* On the encoder thread: p's requests queued for the exporter. */
static void encode(struct export_loop *l, const struct profile *p, uint64_t interval)
{
	struct otlp_encode_options eo = {
		.resource_attrs = l->cfg->resource_attrs, .nresource_attrs = l->cfg->nresource_attrs,
		.max_message_size = l->cfg->max_message_size,
	};
	struct otlp_batch batch;
	int r;

	r = otlp_encode(p, &eo, &batch);
	if (r) {
		log_error("Failed to encode the profile: %s", strerror(-r));
		return;
	}
	if (batch.dropped_resources) {
		pthread_mutex_lock(&l->lock);
		l->dropped_too_large += batch.dropped_samples;
		pthread_mutex_unlock(&l->lock);
		log_warn("%" PRIu64 " %s larger than --max-message-size alone, dropped (%" PRIu64 " %s)",
			 batch.dropped_resources, plural(batch.dropped_resources, "process", "processes"), batch.dropped_samples,
			 plural(batch.dropped_samples, "sample", "samples"));
	}
	if (l->at_peak)
		l->at_peak();
	for (size_t i = 0; i < batch.nmessages; i++) {
		/* The exporter owns the data from here. */
		exporter_enqueue(l->exporter, batch.messages[i].data, batch.messages[i].len, batch.messages[i].nsamples);
		batch.messages[i].data = NULL;
	}
	log_debug("Interval %" PRIu64 ": %" PRIu64 " samples in %zu request%s", interval, p->total_count,
		  batch.nmessages, batch.nmessages == 1 ? "" : "s");
	otlp_batch_free(&batch);
}

/* The encoder thread: the profiles handed over, in order, until stopped with none left. */
static void *encoder_main(void *arg)
{
	struct export_loop *l = arg;
	uint64_t encoded = 0;

	pthread_mutex_lock(&l->lock);
	for (;;) {
		struct profile *p;

		while (!l->queued && !l->stopping)
			pthread_cond_wait(&l->wake, &l->lock);
		if (!l->queued)
			break;
		p = l->queue[0];
		memmove(l->queue, l->queue + 1, (l->queued - 1) * sizeof(l->queue[0]));
		l->queued--;
		pthread_mutex_unlock(&l->lock);
		encode(l, p, ++encoded);
		profile_free(p);
		if (l->encoded)
			l->encoded();
		pthread_mutex_lock(&l->lock);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

void export_loop_on_encoded(struct export_loop *l, void (*encoded)(void), void (*at_peak)(void))
{
	l->encoded = encoded;
	l->at_peak = at_peak;
}

/* Started at the first profile: an idle daemon holds no encoder stack. Signals blocked, as the
 * sender's (export_loop_new()). */
static int start_encoder(struct export_loop *l)
{
	sigset_t all, old;
	int r;

	if (l->encoder_started)
		return 0;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&l->encoder, NULL, encoder_main, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		return -r;
	l->encoder_started = true;
	return 0;
}

int export_loop_submit(struct export_loop *l, struct profile *p)
{
	uint64_t samples = p->total_count;
	bool full;
	int r;

	exporter_report(l->exporter);
	r = start_encoder(l);
	if (r) {
		log_error("Failed to start the OTLP encoder: %s", strerror(-r));
		profile_free(p);
		return r;
	}
	pthread_mutex_lock(&l->lock);
	l->intervals++;
	full = l->queued == ENCODE_QUEUE_MAX;
	if (full)
		l->dropped_unencoded += samples;
	else
		l->queue[l->queued++] = p;
	pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->lock);
	if (full) {
		log_warn("The profile of interval %" PRIu64 " was dropped (%" PRIu64 " %s): the OTLP encoder is still on "
			 "the two before it", l->intervals, samples, plural(samples, "sample", "samples"));
		profile_free(p);
		return -EBUSY;
	}
	return 0;
}

int export_loop_finish(struct export_loop *l, uint64_t timeout_ns)
{
	struct exporter_stats st;
	int r;

	if (!l)
		return 0;
	if (l->encoder_started) {
		/* The profiles handed over are encoded first: CPU work, bounded by their size. */
		pthread_mutex_lock(&l->lock);
		l->stopping = true;
		pthread_cond_signal(&l->wake);
		pthread_mutex_unlock(&l->lock);
		pthread_join(l->encoder, NULL);
	}
	r = exporter_shutdown(l->exporter, clock_ns(CLOCK_MONOTONIC) + timeout_ns);
	exporter_report(l->exporter);
	exporter_get_stats(l->exporter, &st);
	log_info("Export: %" PRIu64 " %s sent (%" PRIu64 " %s, %" PRIu64 " bytes), %" PRIu64
		 " %s; dropped: %" PRIu64 " queue full, %" PRIu64 " after retries, %" PRIu64 " refused, %" PRIu64
		 " at shutdown (%" PRIu64 " %s); %" PRIu64 " %s rejected in part",
		 st.sent, plural(st.sent, "request", "requests"), st.samples_sent, plural(st.samples_sent, "sample", "samples"),
		 st.bytes_sent, st.retries, plural(st.retries, "retry", "retries"), st.dropped_queue_full, st.dropped_retries,
		 st.dropped_permanent, st.dropped_shutdown, st.dropped_samples + l->dropped_too_large + l->dropped_unencoded,
		 plural(st.dropped_samples + l->dropped_too_large + l->dropped_unencoded, "sample", "samples"), st.rejected_profiles,
		 plural(st.rejected_profiles, "profile", "profiles"));
	if (st.enqueued && !st.sent) {
		char shown[512];

		log_error("Nothing was delivered to the collector at %s: %" PRIu64 " %s (%" PRIu64
			  " %s) lost; the failures above say why",
			  parse_redact_url(l->cfg->url ? l->cfg->url : l->cfg->target, shown, sizeof(shown)), st.enqueued,
			  plural(st.enqueued, "request", "requests"), st.dropped_samples + l->dropped_too_large + l->dropped_unencoded,
			  plural(st.dropped_samples + l->dropped_too_large + l->dropped_unencoded, "sample", "samples"));
		r = -ENOTCONN;
	}
	exporter_free(l->exporter);
	loop_free(l);
	return r;
}

void export_loop_stats(struct export_loop *l, struct exporter_stats *stats, uint64_t *dropped_unsent)
{
	exporter_get_stats(l->exporter, stats);
	pthread_mutex_lock(&l->lock);
	*dropped_unsent = l->dropped_too_large + l->dropped_unencoded;
	pthread_mutex_unlock(&l->lock);
}
