/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroup v2 ids to what their paths say (container id, pod uid, systemd unit). Every BPF record
 * carries the task's cgroup v2 id; when /proc/PID is already gone (a process that lived for a
 * moment), the id is all that says which container it ran in. A cgroup v2 id is the inode number
 * of the cgroup's directory, so a miss walks the cgroup v2 mount (bounded in depth and directories)
 * for the directory with that inode and parses its path as /proc/PID/cgroup would show it.
 *
 * Bounded: a direct-mapped cache of max_entries ids, found or not (ids are never reused, so a
 * cgroup not found is gone for good and is not looked for again until its slot is taken).
 * Reading the directory tree needs no privilege.
 */
#ifndef OTELPROFD_CGROUP_IDS_H
#define OTELPROFD_CGROUP_IDS_H

#include <stddef.h>
#include <stdint.h>

#include "process/cgroup.h"

#define CGROUP_IDS_DEFAULT_MAX 1024

struct cgroup_ids_counters {
	uint64_t hits;      /* lookups answered by the cache */
	uint64_t walks;     /* misses that walked the hierarchy */
	uint64_t not_found; /* walks that found no cgroup with the id (removed since) */
	uint64_t replaced;  /* cached ids dropped for another one in their slot */
	uint64_t walk_bound; /* walks stopped by the directory bound */
};

struct cgroup_ids;

/* root: the cgroup v2 mount (tests give any directory tree). NULL on allocation failure. */
struct cgroup_ids *cgroup_ids_new(const char *root, size_t max_entries);
void cgroup_ids_free(struct cgroup_ids *c);

/*
 * What the cgroup with this id says. 0, -ENODATA for the root cgroup (on a host whose cgroup v2
 * hierarchy is unused, every task's: it says nothing, and the cgroup v1 paths may say more),
 * -ENOENT (no such cgroup under root now), or -errno.
 */
int cgroup_ids_lookup(struct cgroup_ids *c, uint64_t id, struct cgroup_info *info);

const struct cgroup_ids_counters *cgroup_ids_counters(const struct cgroup_ids *c);

#endif
