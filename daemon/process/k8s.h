/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes pod metadata: a background thread lists and then watches the pods of this node on the
 * API server (in-cluster service account, TLS with the cluster CA, libcurl) and keeps a bounded cache
 * of them (k8s_pods.h). Lookups are by pod uid and container id, from memory, never a network request,
 * so the sampling loop never waits for the API.
 *
 * The watch resumes from the last resourceVersion seen (bookmarks included); a 410 Gone (as the HTTP
 * status or as an ERROR event) relists. Failures reconnect with exponential backoff. The thread logs
 * once when the API stops answering (and once when it answers again), never per attempt.
 */
#ifndef OTELPROFD_K8S_H
#define OTELPROFD_K8S_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process/k8s_pods.h"

#define K8S_DEFAULT_SECRETS_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct k8s_config {
	/* Base URL of the API server. NULL: $OTELPROFD_K8S_API_URL, else
	 * https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (in-cluster). */
	const char *api_url;
	/* Directory holding token and ca.crt. NULL: $OTELPROFD_K8S_SECRETS_DIR, else K8S_DEFAULT_SECRETS_DIR. */
	const char *secrets_dir;
	const char *node_name;     /* the node whose pods are watched (spec.nodeName); required */
	size_t max_pods;           /* 0: K8S_PODS_DEFAULT_MAX */
	uint64_t deleted_grace_ns; /* 0: K8S_PODS_DEFAULT_GRACE_NS */
	unsigned backoff_min_ms;   /* 0: 500 */
	unsigned backoff_max_ms;   /* 0: 30000 */
	unsigned watch_timeout_s;  /* server-side timeout of one watch request; 0: 300 */
};

struct k8s_counters {
	uint64_t lists, list_errors;   /* LIST requests that succeeded / failed */
	uint64_t watches, watch_errors; /* WATCH requests started / failed (not counting normal ends) */
	uint64_t events;               /* watch events applied (ADDED, MODIFIED, DELETED, BOOKMARK) */
	uint64_t bookmarks;            /* of which bookmarks */
	uint64_t gone;                 /* 410 Gone answers (each forces a relist) */
	struct k8s_pods_counters pods; /* the cache's own counters */
};

struct k8s;

/*
 * Whether an API server is configured: config->api_url, $OTELPROFD_K8S_API_URL or
 * $KUBERNETES_SERVICE_HOST is set.
 */
bool k8s_configured(const struct k8s_config *config);

/*
 * Read the configuration and start the watcher thread. NULL with *err set: -ENOENT (no API server
 * configured, or the token or CA file missing), -EINVAL (no node name, a bad URL), -ENOMEM, or the
 * -errno of pthread_create. why (why_size bytes) says what was wrong in one line.
 */
struct k8s *k8s_start(const struct k8s_config *config, int *err, char *why, size_t why_size);

/* Stop the thread (it aborts a request in flight within about a second) and free everything. */
void k8s_stop(struct k8s *k);

/* The names of a pod and one of its containers, from the cache. See k8s_pods_lookup(). */
bool k8s_lookup(struct k8s *k, const char *pod_uid, const char *container_id, struct k8s_pod_names *out);

/* The URL the watcher talks to (owned by k). */
const char *k8s_api_url(const struct k8s *k);

void k8s_counters(struct k8s *k, struct k8s_counters *out);
/* The counters, as one debug line of the log. */
void k8s_log_counters(struct k8s *k);

#endif
