/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon/export/: profiles to a collector. The exporter's configuration from flags and OTEL_* variables
 * (otel_env), the bounded queue, the sender thread and its gRPC and HTTP transports, the per-interval
 * loop. May include output/ (OTLP encoding), profile/ and the top-level helpers.
 */
/*
 * The daemon's export side: owns the transport and exporter made from the configuration, says
 * when the next interval ends (jittered), and turns each interval's profile into queued requests.
 * Used only from the main thread; encoding is the encoder thread's business, the network the
 * exporter's thread's.
 */
#ifndef OTELPROFD_EXPORT_LOOP_H
#define OTELPROFD_EXPORT_LOOP_H

#include <stdint.h>

#include "export/export_sender.h"
#include "export/otel_env.h"
#include "profile/profile.h"

struct export_loop;

/* NULL with errno; the reason is logged. cfg must outlive the loop. */
struct export_loop *export_loop_new(const struct export_config *cfg);
/* Length of the next interval: the configured one +-10%, so a fleet does not send in lockstep. */
uint64_t export_loop_next_interval_ns(struct export_loop *l);
/* Hand p over (the loop frees it, whatever the outcome) to be encoded into requests on the encoder
 * thread; logs the exporter's failures since the last interval. 0, or -EBUSY when the encoder is
 * still on two profiles (p dropped, counted), or -errno. */
int export_loop_submit(struct export_loop *l, struct profile *p);
/* encoded() runs on the encoder thread after each profile is encoded and freed (memory handed back);
 * at_peak() (NULL: none) once it is encoded, its requests made and the profile not yet freed: the
 * export's high point of memory. Set before the first export_loop_submit(). */
void export_loop_on_encoded(struct export_loop *l, void (*encoded)(void), void (*at_peak)(void));
/* The exporter's counters now, and the samples dropped before any request held them: a process over
 * the size cap alone, a profile the encoder had no room for. */
void export_loop_stats(struct export_loop *l, struct exporter_stats *stats, uint64_t *dropped_unsent);
/* Send what is queued within timeout_ns, log the totals, and free the loop. 0, -ETIMEDOUT (some
 * requests undelivered) or -ENOTCONN (requests were made and none was delivered: logged). */
int export_loop_finish(struct export_loop *l, uint64_t timeout_ns);

#endif
