/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HotSpot's attach protocol, to make a running JVM write its perf map (/tmp/perf-NSPID.map, what
 * `jcmd PID Compiler.perfmap` asks for; JDK 17 and later) without a restart or a flag: the
 * technique of jattach and async-profiler. Everything goes through /proc/PID/root,
 * so the files are the ones the JVM sees in its own mount namespace:
 *   1. when its socket /tmp/.java_pidNSPID is missing: create /tmp/.attach_pidNSPID, send SIGQUIT (only when the JVM handles SIGQUIT: a process that
 *      does not would die of it), wait for the socket;
 *   2. connect, send "1\0jcmd\0Compiler.perfmap\0\0\0", read the reply ("0" first: done).
 * HotSpot accepts a peer of its own user or root; the files are made by the caller's user.
 * Blocking (bounded by timeout_ms): run it off the sample path (jvm_attacher.h).
 */
#ifndef OTELPROFD_JVM_ATTACH_H
#define OTELPROFD_JVM_ATTACH_H

#include <stdbool.h>
#include <sys/types.h>

/* The process maps HotSpot (a libjvm.so mapping). */
bool jvm_attach_is_hotspot(pid_t pid);

/* The process's pid in its own pid namespace (the last NSpid of /proc/PID/status); pid when unknown. */
pid_t jvm_attach_ns_pid(pid_t pid);

/*
 * Ask the JVM pid (nspid: its pid in its own namespace) to write its perf map. 0; -ENOTSUP when it
 * does not handle SIGQUIT (attaching would kill it) and has no attach socket yet (a JVM still
 * starting, or run with -Xrs); -ETIMEDOUT when the
 * socket did not appear or the reply did not come in time; -EPROTO when the JVM answered an error;
 * another -errno from the system calls (-EACCES: a JVM of another user, the daemon lacking the
 * rights).
 */
int jvm_attach_perfmap(pid_t pid, pid_t nspid, int timeout_ms);

#endif
