/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The goroutine labels a sample's record carries (OTELPROF_SAMPLE_GO_LABELS, read by
 * runtimes/go/go_labels.bpf.h) as attributes of the sample's link, in the aggregate's AGG_LINK format
 * ("key\0value\0" pairs after the 24 bytes of trace and span id, zero when the sample has no trace):
 * pprof writes them as labels, OTLP as sample attributes.
 */
#ifndef OTELPROFD_GO_LABELS_H
#define OTELPROFD_GO_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"

struct go_labels_counters {
	uint64_t samples;   /* samples given their goroutine's labels */
	uint64_t labels;    /* labels put on them */
	uint64_t cut;       /* labels whose key or value BPF cut at OTELPROF_GO_LABEL_LEN bytes */
	uint64_t dropped;   /* labels left out: beyond OTELPROF_GO_MAX_LABELS (BPF), an empty key, or
			       no room left in the link */
	uint64_t malformed; /* records whose label tail was out of bounds */
};

/*
 * Append the labels of the sample record data (size bytes) to link[0 .. len), at most max bytes
 * (24 zero ids first when len is 0), sorted by key so one label set is one link: the new length,
 * len when the record has none.
 */
size_t go_labels_link(const void *data, size_t size, uint8_t *link, size_t len, size_t max,
		      struct go_labels_counters *c);

#endif
