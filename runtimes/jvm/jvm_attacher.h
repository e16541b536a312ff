/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JVM room's part on the sample path: a thread that makes sampled HotSpot processes write their
 * perf maps (jvm_attach.h), so JIT frames are named Class.method without -XX flags or a restart.
 * The sample path tells it which processes it saw (jvm_attacher_seen(): a lock and a queue slot,
 * at a process's first sample and now and then after); the thread checks once per process whether
 * it is a JVM and asks each JVM for its map at most once per refresh period while it is sampled,
 * so code compiled later is named too. The attach itself runs in the broker (jvm_broker.h), as the
 * JVM's user, or without one on this thread as the daemon's user. Bounded: RUNTIME_JVM_QUEUE requests waiting and
 * RUNTIME_JVM_TABLE processes remembered, drops counted.
 */
#ifndef OTELPROFD_JVM_ATTACHER_H
#define OTELPROFD_JVM_ATTACHER_H

#include <stdint.h>
#include <sys/types.h>

#define RUNTIME_JVM_QUEUE 64
#define RUNTIME_JVM_TABLE 256
/* Longest wait for one JVM's attach listener and reply. */
#define RUNTIME_JVM_ATTACH_TIMEOUT_MS 3000

struct jvm_attacher_counters {
	uint64_t jvms;            /* HotSpot processes found */
	uint64_t perf_maps;       /* perf maps the JVMs wrote when asked */
	uint64_t failed;          /* attaches that failed (refused, an error answered, the process gone,
				     another user without a broker) */
	uint64_t not_attachable;  /* attaches skipped: the JVM did not handle SIGQUIT (yet): not signalled */
	uint64_t timed_out;       /* attaches that did not end in time (no listener, no reply) */
	uint64_t rate_limited;    /* attaches the broker put off (JVM_BROKER_RATE): asked again later */
	uint64_t broker_lost;     /* attaches not made: the broker was gone */
	uint64_t queue_full;      /* requests dropped: RUNTIME_JVM_QUEUE waiting */
	uint64_t table_full;      /* processes forgotten to make room (RUNTIME_JVM_TABLE) */
};

struct jvm_attacher;
struct jvm_broker;

/* Start the thread; refresh_ms: the least time between two perf maps of one JVM; broker: where
 * attaches run (borrowed: outlives the attacher), NULL to run them on the thread, as the daemon's
 * user. NULL on failure. */
struct jvm_attacher *jvm_attacher_new(unsigned refresh_ms, struct jvm_broker *broker);
/* Stop the thread (after the attach under way, if any) and free; NULL is accepted. */
void jvm_attacher_free(struct jvm_attacher *a);
/* A sample of process pid (started at start_ns) was seen. */
void jvm_attacher_seen(struct jvm_attacher *a, pid_t pid, uint64_t start_ns);
void jvm_attacher_counters(struct jvm_attacher *a, struct jvm_attacher_counters *out);

#endif
