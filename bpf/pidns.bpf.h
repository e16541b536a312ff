/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Pids as the daemon's /proc shows them. BPF helpers and task fields give pids of the initial PID
 * namespace; a daemon in a PID namespace of its own (a container without the host's PIDs, such as
 * systemd-nspawn's, or `unshare --pid --mount-proc`) reads /proc in its namespace, where the same
 * numbers name other processes or none. With pidns_translate set, every pid and tid a record carries
 * is the task's in the daemon's namespace (pidns_dev, pidns_ino: /proc/self/ns/pid), and a task
 * with none there (the host's, another container's) is left out: never sent under a number that
 * names another process in the daemon's /proc. Included by profile.bpf.c only.
 */
#ifndef OTELPROFD_PIDNS_BPF_H
#define OTELPROFD_PIDNS_BPF_H

const volatile bool pidns_translate = false; /* the daemon runs in a PID namespace other than the initial one */
const volatile __u64 pidns_dev = 0;          /* that namespace's device and inode (stat /proc/self/ns/pid) */
const volatile __u64 pidns_ino = 0;

/* The namespace's level (0: the initial one), learned from the first task found in it by the
 * helper; -1 until then. Lets a task of a namespace nested in it (and a task other than the current
 * one) be translated from its struct pid. */
int pidns_level = -1;

/* Deepest level a struct pid can have (the kernel's MAX_PID_NS_LEVEL). */
#define PIDNS_MAX_LEVEL 32

/* The number of struct pid p in the daemon's namespace, or 0 when p has none there. */
static __always_inline __u32 pidns_nr(struct pid *p, int level)
{
	struct upid *u;

	if (!p || level < 0 || level > PIDNS_MAX_LEVEL || level > (int)BPF_CORE_READ(p, level))
		return 0;
	u = (struct upid *)((char *)p + bpf_core_field_offset(struct pid, numbers)) + level;
	if (BPF_CORE_READ(u, ns, ns.inum) != pidns_ino)
		return 0;
	return BPF_CORE_READ(u, nr);
}

/* task's pid (thread group id) and tid in the daemon's namespace: false when it has none there. */
static __always_inline bool pidns_task_ids(struct task_struct *task, __u32 *pid, __u32 *tid)
{
	int level = pidns_level;

	*tid = pidns_nr(BPF_CORE_READ(task, thread_pid), level);
	if (!*tid) /* the usual answer for the host's tasks: no need to look at the leader */
		return false;
	*pid = pidns_nr(BPF_CORE_READ(task, group_leader, thread_pid), level);
	return *pid != 0;
}

/* The current task's pid and tid in the daemon's namespace: false when it has none there. The
 * helper answers for a task of that very namespace; one of a namespace nested in it is found by its
 * struct pid. */
static __always_inline bool pidns_current_ids(__u32 *pid, __u32 *tid)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct bpf_pidns_info ns;

	if (!bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns))) {
		if (pidns_level < 0)
			pidns_level = BPF_CORE_READ(task, thread_pid, level);
		*pid = ns.tgid;
		*tid = ns.pid;
		return true;
	}
	return pidns_task_ids(task, pid, tid);
}

/* The current task's pid and tid as records carry them, given the initial namespace's: translated
 * when pidns_translate is set; false when it has none in the daemon's namespace. */
static __always_inline bool pidns_current(__u32 *pid, __u32 *tid)
{
	return !pidns_translate || pidns_current_ids(pid, tid);
}

/* The tid of task (not the current one) as records carry it; 0 when it has none in the daemon's
 * namespace. */
static __always_inline __u32 pidns_tid_of(struct task_struct *task)
{
	__u32 pid, tid;

	if (!pidns_translate)
		return BPF_CORE_READ(task, pid);
	return pidns_task_ids(task, &pid, &tid) ? tid : 0;
}

/* The pid (thread group id) of task, a process other than the current one, as records carry it:
 * the initial namespace's without translation; 0 when it has none in the daemon's. */
static __always_inline __u32 pidns_tgid_of(struct task_struct *task)
{
	__u32 pid, tid;

	if (!pidns_translate)
		return BPF_CORE_READ(task, tgid);
	return pidns_task_ids(task, &pid, &tid) ? pid : 0;
}

#endif
