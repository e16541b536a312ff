/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The attach broker: attaching to a JVM as the JVM's own user (jvm_attach.h), so JVMs of every
 * user are asked for their perf maps while the sampling daemon keeps no right to act as another
 * user. HotSpot accepts an attach from its own euid/egid or root only, and its socket and signal
 * need that user's rights (or CAP_DAC_OVERRIDE and CAP_KILL, which the daemon gives up).
 *
 * jvm_broker_start() forks a small process before the daemon drops its capabilities. It keeps
 * only JVM_BROKER_CAPS (CAP_SETUID and CAP_SETGID to take on a JVM's user, CAP_SYS_PTRACE to
 * open another user's /proc/PID/root), no new privileges, no other fd than its socket; it reads
 * pids from the daemon over a socketpair and, for each, checks the process itself (it maps
 * libjvm.so), holds it by a pidfd and its root by an fd, and forks a child that takes the JVM's
 * effective uid, gid and groups, drops every capability and runs the attach; the child's exit
 * status is the answer. What the daemon can make it do is therefore what `jcmd PID
 * Compiler.perfmap` run by each JVM's owner does, nothing else: no path, command or user is
 * chosen by the daemon. Bounded: one attach at a time, JVM_BROKER_CHILD_MS per attach (the child
 * is killed after it), JVM_BROKER_RATE attaches a second at most (beyond: -EBUSY). It ends when
 * the daemon closes its end or dies.
 */
#ifndef OTELPROFD_JVM_BROKER_H
#define OTELPROFD_JVM_BROKER_H

#include <stdint.h>
#include <sys/types.h>

/* CAP_SETGID (6), CAP_SETUID (7), CAP_SYS_PTRACE (19). */
#define JVM_BROKER_CAPS ((1ULL << 6) | (1ULL << 7) | (1ULL << 19))
/* Longest one attach may take before the child is killed (the attach's own timeout, and a margin). */
#define JVM_BROKER_CHILD_MS 4000
/* Attaches a second at most, over all JVMs (a bucket of as many). */
#define JVM_BROKER_RATE 4
/* The broker's process name (comm). */
#define JVM_BROKER_NAME "otelprofd-jvm"

struct jvm_broker;

/* Fork the broker (keep_caps: the capabilities it keeps, normally JVM_BROKER_CAPS). NULL with
 * errno set on failure. Call it before any thread starts. */
struct jvm_broker *jvm_broker_start(uint64_t keep_caps);
/* Have the broker ask JVM pid for its perf map, as its user; waits JVM_BROKER_CHILD_MS and 2 s
 * more at most. 0, or -errno: jvm_attach_perfmap()'s, jvm_attach_target_open()'s, -EBUSY (above
 * JVM_BROKER_RATE), -ETIMEDOUT (the child was killed, or no answer came in time: a late one is
 * skipped by the next call), -EPERM (the broker could not take on the JVM's user), -EPIPE (the
 * broker is gone: every later call fails so). One caller at a time. */
int jvm_broker_attach(struct jvm_broker *b, pid_t pid);
/* The broker's pid. */
pid_t jvm_broker_pid(const struct jvm_broker *b);
/* End the broker (after its attach under way, if any) and free; NULL is accepted. */
void jvm_broker_stop(struct jvm_broker *b);

#endif
