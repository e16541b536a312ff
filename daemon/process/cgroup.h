/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who a process is, from its cgroup: the container id, the Kubernetes pod uid and the systemd unit
 * named by the path in /proc/PID/cgroup, for Docker, containerd (plain and under Kubernetes), CRI-O
 * and Podman, on cgroup v1, v2 and hybrid hierarchies, in both the systemd (`docker-ID.scope`,
 * `kubepods-burstable-podUID.slice`) and the cgroupfs (`/docker/ID`, `/kubepods/burstable/podUID/ID`)
 * path styles. Also resolves the targets of the --cgroup and --container filters to cgroup ids.
 *
 * Everything here works on caller-provided buffers; nothing is allocated that the caller must free.
 */
#ifndef OTELPROFD_CGROUP_H
#define OTELPROFD_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CGROUP_CONTAINER_ID_LEN 64 /* hex digits of a container id */
#define CGROUP_POD_UID_LEN 36      /* 8-4-4-4-12 */
#define CGROUP_UNIT_LEN 256        /* longest systemd unit name kept (systemd's own bound) */

enum cgroup_runtime {
	CGROUP_RUNTIME_NONE = 0,
	CGROUP_RUNTIME_UNKNOWN,    /* a bare container id: cgroupfs style of containerd or Docker under Kubernetes */
	CGROUP_RUNTIME_DOCKER,     /* docker-ID.scope, /docker/ID */
	CGROUP_RUNTIME_CONTAINERD, /* cri-containerd-ID.scope, containerd-ID.scope */
	CGROUP_RUNTIME_CRIO,       /* crio-ID.scope, crio-ID */
	CGROUP_RUNTIME_PODMAN,     /* libpod-ID.scope, libpod-ID */
};

struct cgroup_info {
	char container_id[CGROUP_CONTAINER_ID_LEN + 1]; /* lowercase hex, "" when none */
	char pod_uid[CGROUP_POD_UID_LEN + 1];           /* "" when not in a Kubernetes pod */
	char systemd_unit[CGROUP_UNIT_LEN];             /* "" when none */
	enum cgroup_runtime runtime;                    /* who named the container */
};

/*
 * Fill info from the text of /proc/PID/cgroup ("hierarchy:controllers:path" lines). The unified (v2)
 * line is read first, then the v1 name=systemd line, then the other v1 lines; each field comes from
 * the first path that names it. What is not found is left empty; malformed lines are skipped.
 */
void cgroup_parse(const char *text, struct cgroup_info *info);

/*
 * The container id named by one path component (len bytes at component), written to id (65 bytes)
 * with the runtime that names containers this way. Monitor cgroups (conmon) name no container.
 */
bool cgroup_component_container_id(const char *component, size_t len, char *id, enum cgroup_runtime *runtime);

/* Read and parse /proc/PID/cgroup. 0, -ESRCH (gone) or another -errno. */
int cgroup_read_pid(pid_t pid, struct cgroup_info *info);

/* Readable name of a runtime ("docker", ...), "" for none. */
const char *cgroup_runtime_name(enum cgroup_runtime runtime);

/*
 * Mount point of the cgroup v2 hierarchy ("/sys/fs/cgroup", or ".../unified" on a hybrid host),
 * or NULL when there is none.
 */
const char *cgroup_v2_root(void);

/* The directory of a cgroup given as cgroup_id_of_path() takes it, into full: 0 or -ENAMETOOLONG. */
int cgroup_path_of(const char *root, const char *path, char *full, size_t len);

/*
 * The cgroup v2 id of a cgroup given as a directory under the v2 mount or as a path relative to it
 * (as /proc/PID/cgroup shows it: "/system.slice/nginx.service"). 0, -ENOENT, -ENOTDIR or -errno.
 */
int cgroup_id_of_path(const char *root, const char *path, uint64_t *id);

/*
 * The cgroups under root that belong to the container id (the full 64 digits or a prefix of at least
 * 12). Fills up to max ids; *n is how many were found (it may exceed max). 0, -EINVAL (not an id)
 * or -errno.
 */
int cgroup_find_container(const char *root, const char *container, uint64_t *ids, size_t max, size_t *n);

#endif
