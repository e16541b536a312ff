// SPDX-License-Identifier: Apache-2.0
#include "sampling/pid_namespace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* The inode of the initial PID namespace: fixed by the kernel (PROC_PID_INIT_INO). */
#define PID_NS_INIT_INO 0xEFFFFFFCu

int pid_namespace_read(const char *proc, struct pid_namespace *ns)
{
	char path[4096], link[64];
	struct stat st;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/self/ns/pid", proc);
	if (stat(path, &st)) {
		/* A kernel without PID namespaces (CONFIG_PID_NS off) has no such file: one namespace. */
		*ns = (struct pid_namespace){ .own = false };
		return 0;
	}
	ns->dev = st.st_dev;
	ns->ino = st.st_ino;
	ns->own = st.st_ino != PID_NS_INIT_INO;
	if (!ns->own)
		return 0;
	/* PROC/self names this process by its pid in PROC's namespace. */
	snprintf(path, sizeof(path), "%s/self", proc);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return -EXDEV;
	link[n] = 0;
	return strtol(link, NULL, 10) == (long)getpid() ? 0 : -EXDEV;
}

const char *pid_namespace_refusal(int err)
{
	if (err == -ENOSYS)
		return "otelprofd runs in a PID namespace of its own and this kernel cannot translate pids "
		       "(bpf_get_ns_current_pid_tgid, Linux 5.7): run it with the host's PIDs "
		       "(Kubernetes hostPID: true, docker run --pid=host)";
	return "otelprofd runs in a PID namespace of its own but /proc shows another one's pids: mount "
	       "/proc for its namespace (unshare --pid --fork --mount-proc), or run it with the host's "
	       "PIDs (Kubernetes hostPID: true, docker run --pid=host)";
}
