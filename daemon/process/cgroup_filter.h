/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The targets of --cgroup and --container as cgroup ids, for the sampler's in-kernel filter: the
 * one place that logs why a target names no cgroup (cgroup.h itself never logs).
 */
#ifndef OTELPROFD_CGROUP_FILTER_H
#define OTELPROFD_CGROUP_FILTER_H

#include <stddef.h>
#include <stdint.h>

/*
 * The ids of cgroup (a path, as cgroup_id_of_path() takes it) and of container's cgroups (an id or
 * a prefix), either NULL, into ids (up to max); *n is how many. 0, or -errno after logging.
 */
int cgroup_filter_resolve(const char *cgroup, const char *container, uint64_t *ids, size_t max, size_t *n);

#endif
