/* SPDX-License-Identifier: Apache-2.0 */
/*
 * struct profile -> OTLP ExportProfilesServiceRequest (../shared/otlp-profiles.md), serialized.
 *
 * One request holds one deduplicated dictionary (element 0 of every table is the zero value) and
 * one ResourceProfiles per process, each with one ScopeProfiles "otelprofd" and one on-CPU Profile
 * (with off-CPU waits in the profile, a second Profile of them: off_cpu/nanoseconds).
 * When a request would exceed max_message_size it is split by resource (each part with its own
 * dictionary); a single process too large alone is dropped and counted.
 *
 * The caller owns the batch: otlp_batch_free() frees every message.
 */
#ifndef OTELPROFD_OTLP_ENCODE_H
#define OTELPROFD_OTLP_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

#define OTLP_DEFAULT_MAX_MESSAGE_SIZE (16u << 20)

/* A resource attribute added to every process (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME). */
struct otlp_attr {
	const char *key;
	const char *value;
};

struct otlp_encode_options {
	/* Added to each resource unless the process already has that key (its own attributes win). */
	const struct otlp_attr *resource_attrs;
	size_t nresource_attrs;
	size_t max_message_size; /* bytes per serialized request; 0 = no bound */
};

/* One serialized ExportProfilesServiceRequest. */
struct otlp_message {
	uint8_t *data;      /* malloc'ed, owned by the batch */
	size_t len;
	size_t nresources;  /* ResourceProfiles in it */
	uint64_t nsamples;  /* samples (timestamps) in it */
};

struct otlp_batch {
	struct otlp_message *messages;
	size_t nmessages;
	uint64_t dropped_resources; /* processes larger than max_message_size alone */
	uint64_t dropped_samples;   /* their samples */
};

/* Encode p into out (which it initialises). 0, or -ENOMEM (out is then empty). */
int otlp_encode(const struct profile *p, const struct otlp_encode_options *options, struct otlp_batch *out);
void otlp_batch_free(struct otlp_batch *batch);

/* Write the whole profile as one request (no size bound) to a stream. 0 or -errno. */
int otlp_write(const struct profile *p, const struct otlp_encode_options *options, FILE *out);
/* The same to path, atomically. 0 or -errno. */
int otlp_write_file(const struct profile *p, const struct otlp_encode_options *options, const char *path);

#endif
