// SPDX-License-Identifier: Apache-2.0
#include "export/export_loop.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
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

struct export_loop {
	const struct export_config *cfg;
	struct exporter *exporter;
	uint64_t intervals;
	uint64_t dropped_too_large; /* samples of processes larger than max_message_size alone */
};

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
		free(l);
		errno = -err;
		return NULL;
	}
	if (!l->exporter) {
		log_error("Failed to start the exporter: %s", strerror(-err));
		free(l);
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

int export_loop_submit(struct export_loop *l, const struct profile *p)
{
	struct otlp_encode_options eo = {
		.resource_attrs = l->cfg->resource_attrs, .nresource_attrs = l->cfg->nresource_attrs,
		.max_message_size = l->cfg->max_message_size,
	};
	struct otlp_batch batch;
	int r;

	l->intervals++;
	exporter_report(l->exporter);
	r = otlp_encode(p, &eo, &batch);
	if (r) {
		log_error("Failed to encode the profile: %s", strerror(-r));
		return r;
	}
	if (batch.dropped_resources) {
		l->dropped_too_large += batch.dropped_samples;
		log_warn("%" PRIu64 " %s larger than --max-message-size alone, dropped (%" PRIu64 " %s)",
			 batch.dropped_resources, plural(batch.dropped_resources, "process", "processes"), batch.dropped_samples,
			 plural(batch.dropped_samples, "sample", "samples"));
	}
	for (size_t i = 0; i < batch.nmessages; i++) {
		/* The exporter owns the data from here. */
		exporter_enqueue(l->exporter, batch.messages[i].data, batch.messages[i].len, batch.messages[i].nsamples);
		batch.messages[i].data = NULL;
	}
	log_debug("Interval %" PRIu64 ": %" PRIu64 " samples in %zu request%s", l->intervals, p->total_count,
		  batch.nmessages, batch.nmessages == 1 ? "" : "s");
	otlp_batch_free(&batch);
	return 0;
}

int export_loop_finish(struct export_loop *l, uint64_t timeout_ns)
{
	struct exporter_stats st;
	int r;

	if (!l)
		return 0;
	r = exporter_shutdown(l->exporter, clock_ns(CLOCK_MONOTONIC) + timeout_ns);
	exporter_report(l->exporter);
	exporter_get_stats(l->exporter, &st);
	log_info("Export: %" PRIu64 " %s sent (%" PRIu64 " %s, %" PRIu64 " bytes), %" PRIu64
		 " %s; dropped: %" PRIu64 " queue full, %" PRIu64 " after retries, %" PRIu64 " refused, %" PRIu64
		 " at shutdown (%" PRIu64 " %s); %" PRIu64 " %s rejected in part",
		 st.sent, plural(st.sent, "request", "requests"), st.samples_sent, plural(st.samples_sent, "sample", "samples"),
		 st.bytes_sent, st.retries, plural(st.retries, "retry", "retries"), st.dropped_queue_full, st.dropped_retries,
		 st.dropped_permanent, st.dropped_shutdown, st.dropped_samples + l->dropped_too_large,
		 plural(st.dropped_samples + l->dropped_too_large, "sample", "samples"), st.rejected_profiles,
		 plural(st.rejected_profiles, "profile", "profiles"));
	if (st.enqueued && !st.sent) {
		char shown[512];

		log_error("Nothing was delivered to the collector at %s: %" PRIu64 " %s (%" PRIu64
			  " %s) lost; the failures above say why",
			  parse_redact_url(l->cfg->url ? l->cfg->url : l->cfg->target, shown, sizeof(shown)), st.enqueued,
			  plural(st.enqueued, "request", "requests"), st.dropped_samples + l->dropped_too_large,
			  plural(st.dropped_samples + l->dropped_too_large, "sample", "samples"));
		r = -ENOTCONN;
	}
	exporter_free(l->exporter);
	free(l);
	return r;
}

void export_loop_stats(struct export_loop *l, struct exporter_stats *stats, uint64_t *dropped_too_large)
{
	exporter_get_stats(l->exporter, stats);
	*dropped_too_large = l->dropped_too_large;
}
