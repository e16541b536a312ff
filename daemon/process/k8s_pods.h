/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pods of this node as the Kubernetes API describes them: a bounded cache from pod uid to the
 * pod's name and namespace, and from each container id of the pod to the container's name, filled
 * from PodList and watch-event JSON texts (parsed with json-c).
 *
 * Thread-safe: the watcher thread applies lists and events while the daemon looks names up; every
 * call holds an internal mutex only for the in-memory update or lookup (JSON is parsed outside it).
 * A deleted pod keeps its names for a grace period, so the last samples of a pod that just went
 * away are still named. Bounded: when full, a deleted pod and then the least recently updated pod
 * is evicted (counted). Nothing here prints or does I/O.
 */
#ifndef OTELPROFD_K8S_PODS_H
#define OTELPROFD_K8S_PODS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define K8S_PODS_DEFAULT_MAX 4096                 /* a node runs at most a few hundred pods */
#define K8S_PODS_DEFAULT_GRACE_NS (120ULL * 1000000000ULL) /* names of deleted pods kept this long */
#define K8S_POD_MAX_CONTAINERS 64                 /* containers (init, app, ephemeral) kept per pod */
#define K8S_RESOURCE_VERSION_LEN 64               /* longest resourceVersion kept, with its NUL */

/* Names filled by a lookup; "" when unknown. Kubernetes caps pod names at 253 and the others at 63. */
struct k8s_pod_names {
	char pod_name[254];
	char namespace_name[64];
	char container_name[64];
};

struct k8s_pods_counters {
	uint64_t entries;            /* pods held now (deleted ones in their grace period included) */
	uint64_t added;              /* pods that entered the cache */
	uint64_t updated;            /* pods that were already there and were replaced */
	uint64_t deleted;            /* pods deleted (watch DELETED, or missing from a relist) */
	uint64_t evicted;            /* pods dropped because the cache was full */
	uint64_t containers_dropped; /* containers past K8S_POD_MAX_CONTAINERS */
	uint64_t malformed;          /* pods, events or lists that were not what the API sends (skipped) */
	uint64_t lookups, hits;      /* lookups, and those that found the pod */
};

enum k8s_event_type {
	K8S_EVENT_ADDED,
	K8S_EVENT_MODIFIED,
	K8S_EVENT_DELETED,
	K8S_EVENT_BOOKMARK,   /* only a newer resourceVersion */
	K8S_EVENT_ERROR,      /* a Status; *status_code says which (410: resourceVersion too old, relist) */
};

struct k8s_pods;

/* max_pods 0: K8S_PODS_DEFAULT_MAX; grace_ns 0: K8S_PODS_DEFAULT_GRACE_NS. NULL on failure. */
struct k8s_pods *k8s_pods_new(size_t max_pods, uint64_t grace_ns);
void k8s_pods_free(struct k8s_pods *c);

/*
 * Replace the cache by a PodList (the answer of GET /api/v1/pods): pods in it are added or updated,
 * pods missing from it are deleted. Its metadata.resourceVersion goes to rv (rv_size bytes, "" when
 * absent). now_ns is any monotonic clock, used for the grace period. 0, -EBADMSG (not a PodList:
 * nothing changed) or -ENOMEM.
 */
int k8s_pods_apply_list(struct k8s_pods *c, const char *json, size_t len, uint64_t now_ns, char *rv,
			size_t rv_size);

/*
 * Apply one watch event ({"type": ..., "object": ...}). Returns its type (>= 0) or -EBADMSG (counted,
 * nothing changed). The object's resourceVersion, when it has one, goes to rv (left alone otherwise);
 * for an ERROR, *status_code is the Status's code (0 when absent).
 */
int k8s_pods_apply_event(struct k8s_pods *c, const char *json, size_t len, uint64_t now_ns, char *rv,
			 size_t rv_size, int *status_code);

/*
 * The names of a pod (uid as the API writes it, lowercase with dashes) and of one of its containers
 * (64 hex digits, as in the cgroup path; NULL or "" for none). false when the pod is unknown; when
 * the pod is known but not the container, container_name is "".
 */
bool k8s_pods_lookup(struct k8s_pods *c, const char *pod_uid, const char *container_id, struct k8s_pod_names *out);

/* A copy of the counters. */
void k8s_pods_counters(struct k8s_pods *c, struct k8s_pods_counters *out);

/* The id of a containerID field ("containerd://ID", "docker://ID", "cri-o://ID"): a pointer past the
 * scheme, or NULL when there is no id. */
const char *k8s_container_id_strip(const char *container_id);

#endif
