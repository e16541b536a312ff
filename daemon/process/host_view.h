/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host as seen from a container whose pid namespace is the host's (a DaemonSet with hostPID):
 * pid 1 is the host's init, so PROC/1/ns/TYPE are the host's namespaces and PROC/1/root is the host's
 * root directory (reading it needs ptrace access to pid 1: CAP_SYS_PTRACE, which otelprofd keeps).
 */
#ifndef OTELPROFD_HOST_VIEW_H
#define OTELPROFD_HOST_VIEW_H

/* 1 when this process is in pid 1's namespace of this type ("uts", "mnt"...), 0 when in another,
 * -1 when unknown (pid 1 not inspectable). proc: NULL for "/proc". */
int host_view_same_namespace(const char *proc, const char *type);

/* 1 when PROC/1/root is this process's own root directory, 0 when another, -1 when unknown. */
int host_view_same_root(const char *proc);

#endif
