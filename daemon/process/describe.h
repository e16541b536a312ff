/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a profile says about each of its processes, from every source that knows: the context the
 * process publishes itself (OTEP 4719, through the trace table), the process table's entry with its
 * cgroup, the Kubernetes pod names, and the host's facts (metadata). process_describe() is the
 * profile builder's describe_process callback (profile/profile.h); its context is a struct
 * process_describer, whose parts are borrowed.
 */
#ifndef OTELPROFD_DESCRIBE_H
#define OTELPROFD_DESCRIBE_H

#include <stdint.h>

#include "profile/profile.h"

struct k8s;
struct metadata;
struct process_table;
struct trace_table;

struct process_describer {
	struct process_table *processes;
	struct metadata *metadata;
	struct k8s *k8s;            /* pod names from the Kubernetes API, or NULL */
	struct trace_table *traces; /* process contexts, or NULL (--no-trace-context) */
};

/* Add the resource attributes of p->processes[process]; ctx is a struct process_describer. */
void process_describe(void *ctx, struct profile *p, uint32_t process);

#endif
