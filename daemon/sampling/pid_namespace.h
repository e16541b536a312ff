/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's PID namespace. BPF sees every task by its pid in the initial namespace; /proc shows
 * the pids of the namespace it was mounted for. In a namespace of its own (a container without the
 * host's PIDs) the BPF programs translate each pid into the daemon's namespace (bpf/pidns.bpf.h),
 * which must then be the one /proc shows. Allocates nothing.
 */
#ifndef OTELPROFD_PID_NAMESPACE_H
#define OTELPROFD_PID_NAMESPACE_H

#include <stdbool.h>
#include <stdint.h>

struct pid_namespace {
	bool own;     /* a namespace other than the initial one: the BPF programs translate pids */
	uint64_t dev; /* its nsfs device and inode (stat of PROC/self/ns/pid), as the BPF helper */
	uint64_t ino; /* bpf_get_ns_current_pid_tgid() takes them */
};

/*
 * Read the calling process's PID namespace into ns (proc: "/proc", or another mount of it).
 * 0 (also without PROC/self/ns/pid: a kernel without PID namespaces has one, the initial one);
 * -EXDEV when the namespace is not the initial one and PROC shows another namespace's pids
 * (PROC/self is not getpid()): then no translation can name them right.
 */
int pid_namespace_read(const char *proc, struct pid_namespace *ns);

/* The one line that says why otelprofd cannot run in this PID namespace, and what to do: err is
 * -EXDEV (from pid_namespace_read()) or -ENOSYS (the kernel lacks the translation helper). */
const char *pid_namespace_refusal(int err);

#endif
