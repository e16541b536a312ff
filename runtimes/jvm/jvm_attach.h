/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HotSpot's attach protocol, to make a running JVM write its perf map (/tmp/perf-NSPID.map, what
 * `jcmd PID Compiler.perfmap` asks for; JDK 17 and later) without a restart or a flag: the
 * technique of jattach and async-profiler. Every path goes under the JVM's root (an O_PATH fd of
 * /proc/PID/root, reached as /proc/self/fd/N), so the files are the ones the JVM sees in its own
 * mount namespace, and the signal goes through a pidfd, so it reaches the process that was checked
 * and never one that reused its pid:
 *   1. when its socket /tmp/.java_pidNSPID is missing: create /tmp/.attach_pidNSPID, send SIGQUIT
 *      (only when the JVM handles SIGQUIT: a process that does not would die of it), wait for the
 *      socket;
 *   2. connect, send "1\0jcmd\0Compiler.perfmap\0\0\0", read the reply ("0" first: done).
 * HotSpot accepts a peer of its own user (euid and egid) or root, and a trigger file of its own
 * user or root; the files are made by the caller's user. jvm_broker.h runs this as the JVM's user.
 * Blocking (bounded by timeout_ms): run it off the sample path (jvm_attacher.h).
 */
#ifndef OTELPROFD_JVM_ATTACH_H
#define OTELPROFD_JVM_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Supplementary groups of a JVM taken on when acting as its user; more are left out. */
#define JVM_ATTACH_MAX_GROUPS 32

/* A JVM to attach to, as read once from /proc (jvm_attach_target_open()). */
struct jvm_attach_target {
	pid_t pid;            /* in the caller's pid namespace */
	pid_t nspid;          /* in the JVM's own (the last NSpid of /proc/PID/status) */
	int pid_fd;           /* pidfd of the process: what SIGQUIT is sent through */
	int root_fd;          /* O_PATH fd of /proc/PID/root: every path of the protocol is under it */
	uid_t uid;            /* its effective uid and gid: the user HotSpot accepts */
	gid_t gid;
	gid_t groups[JVM_ATTACH_MAX_GROUPS]; /* its supplementary groups (the first ones) */
	size_t ngroups;
	bool catches_sigquit; /* SigCgt has SIGQUIT: HotSpot's handler, which starts the listener */
};

/* The process maps HotSpot (a libjvm.so mapping). */
bool jvm_attach_is_hotspot(pid_t pid);

/*
 * Read what attaching to pid needs and hold the process (pidfd) and its root (fd): 0, with t's fds
 * to close with jvm_attach_target_close(); -EPERM when pid is not a HotSpot process; -ESRCH when it
 * is gone (or exited while it was read: what was read could be another process's); another
 * -errno from the system calls (-EACCES: no right to its /proc/PID/root).
 */
int jvm_attach_target_open(pid_t pid, struct jvm_attach_target *t);
/* Close t's fds (each may be -1). */
void jvm_attach_target_close(struct jvm_attach_target *t);

/*
 * Ask the JVM t to write its perf map, as the calling process's user. 0; -ENOTSUP when it does not
 * handle SIGQUIT (attaching would kill it) and has no attach socket yet (a JVM still starting, or
 * run with -Xrs); -ETIMEDOUT when the socket did not appear or the reply did not come in time;
 * -EPROTO when the JVM answered an error; another -errno from the system calls (-EACCES, -EPERM: a
 * JVM of another user).
 */
int jvm_attach_perfmap(const struct jvm_attach_target *t, int timeout_ms);

#endif
