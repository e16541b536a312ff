/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The resource attributes of each profiled process: who it is (process.*, service.name), where it
 * runs (container.id, k8s.*, systemd.unit) and on which host (host.name, host.id, k8s.node.name),
 * merged with the OTEL_RESOURCE_ATTRIBUTES of otelprofd's own environment.
 *
 * metadata_new() reads the host's facts once; metadata_free() releases them. Nothing here prints.
 */
#ifndef OTELPROFD_METADATA_H
#define OTELPROFD_METADATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process/process_table.h"
#include "profile/profile.h"

/* What the Kubernetes API said about a container; any field may be NULL. */
struct k8s_names {
	const char *pod_name;
	const char *namespace_name;
	const char *container_name;
};

struct metadata_config {
	const char *proc_root;       /* NULL: "/proc" */
	const char *machine_id_path; /* NULL: pid 1's /etc/machine-id, else ours (see metadata_new) */
	const char *hostname;        /* NULL: the host's name (see metadata_new) */
	const char *resource_attributes; /* NULL: getenv("OTEL_RESOURCE_ATTRIBUTES") */
	const char *node_name;       /* NULL: getenv("K8S_NODE_NAME"), else getenv("NODE_NAME") */
};

struct metadata;

/*
 * NULL on allocation failure. Malformed OTEL_RESOURCE_ATTRIBUTES entries are skipped (counted).
 * host.name and host.id are the host's even from a container whose pid namespace is the host's
 * (a DaemonSet with hostPID: its own UTS namespace and image would give the pod's):
 *   host.name  gethostname() when otelprofd shares pid 1's UTS namespace; else (or when it cannot
 *              tell) the node name (K8S_NODE_NAME, NODE_NAME), else pid 1's /etc/hostname (through
 *              PROC/1/root), else gethostname()
 *   host.id    pid 1's /etc/machine-id (PROC/1/root/etc/machine-id), else /etc/machine-id
 */
struct metadata *metadata_new(const struct metadata_config *config);
void metadata_free(struct metadata *m);

/* Entries of OTEL_RESOURCE_ATTRIBUTES that were skipped as malformed. */
unsigned metadata_skipped_resource_attributes(const struct metadata *m);
/* The node name from the environment (downward API), or NULL. */
const char *metadata_node_name(const struct metadata *m);

/*
 * service.name of a process, first found of: its own OTEL_SERVICE_NAME, the Kubernetes container
 * name, its systemd service unit without ".service", its executable name (or its comm).
 */
const char *metadata_service_name(const struct process_info *pi, const char *k8s_container, const char *comm,
				  char *buf, size_t size);

/*
 * Add the resource attributes of process (the newest in p): pi may be NULL when the process was never
 * found (then only what the profile knows is said), k8s may be NULL. Host attributes and
 * OTEL_RESOURCE_ATTRIBUTES come last, and never replace what the process says about itself.
 */
void metadata_describe(const struct metadata *m, const struct process_info *pi, const struct k8s_names *k8s,
		       struct profile *p, uint32_t process);

/*
 * Call fn(ctx, key, value) for each "key=value" entry of an OTEL_RESOURCE_ATTRIBUTES text (entries
 * separated by ',', keys and values trimmed and percent-decoded). Returns the number of entries
 * skipped as malformed (no '=', empty key, bad escape, too long).
 */
unsigned resource_attributes_parse(const char *text, void (*fn)(void *ctx, const char *key, const char *value),
				   void *ctx);
/* The value of name in an OTEL_RESOURCE_ATTRIBUTES text, into buf. false when absent. */
bool resource_attributes_get(const char *text, const char *name, char *buf, size_t size);

#endif
