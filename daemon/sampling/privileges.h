/* SPDX-License-Identifier: Apache-2.0 */
/* Capabilities: what otelprofd keeps once sampling is set up, and dropping the rest. */
#ifndef OTELPROFD_PRIVILEGES_H
#define OTELPROFD_PRIVILEGES_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Capabilities kept after setup, as a bit mask of CAP_* numbers:
 *   CAP_SYS_PTRACE          read other processes' /proc/PID/{maps,root,environ,exe}
 *   CAP_DAC_READ_SEARCH     read their binaries and debug files whatever the file modes
 *   CAP_CHECKPOINT_RESTORE  open the entries of /proc/PID/map_files (the mapped file itself)
 *   CAP_SYSLOG              real addresses in /proc/kallsyms, re-read when modules load
 * Everything else, CAP_BPF, CAP_PERFMON, CAP_SYS_RESOURCE and CAP_SYS_ADMIN among them, is only
 * needed to load the programs and open the perf events. The one thread that loads the runtimes'
 * BPF parts at their first process (sampling/runtime_bpf.h; none with OTELPROFD_RUNTIMES_AT_START=1)
 * keeps CAP_BPF and CAP_PERFMON until none waits: for the daemon's life on a host without Python
 * or Go (docs/hardening.md says what that trades).
 */
uint64_t privileges_kept_mask(void);

/*
 * Whether reading the BPF maps already held needs CAP_BPF on this kernel: before Linux 5.19,
 * kernel.unprivileged_bpf_disabled refused every bpf() command to a process without it (the
 * self-metrics read the BPF counters so). release: uname's ("5.15.0-91-generic");
 * unprivileged_bpf_disabled: the sysctl's value, -1 when unreadable (taken as set).
 */
bool privileges_bpf_needs_cap(const char *release, int unprivileged_bpf_disabled);
/* The same for the running kernel. */
bool privileges_bpf_needs_cap_here(void);

/* Drop every capability not in keep (a mask of CAP_* bits) from the effective, permitted,
 * inheritable and ambient sets of the calling thread. 0 or -errno. */
int privileges_keep_only(uint64_t keep);

/* Drop every capability but the kept ones (and CAP_BPF when keep_bpf; CAP_BPF, CAP_PERFMON and
 * CAP_SYS_ADMIN when keep_attach: --alloc attaches uprobes to the files it finds as processes come)
 * from the effective, permitted, inheritable and ambient sets of the calling thread. 0 or -errno. */
int privileges_drop_after_setup(bool keep_bpf, bool keep_attach);
/* The capabilities privileges_drop_after_setup() keeps, as a mask. */
uint64_t privileges_after_setup_mask(bool keep_bpf, bool keep_attach);
/* CAP_BPF and CAP_PERFMON: what loading a perf_event program needs (the runtimes' BPF parts). */
uint64_t privileges_load_mask(void);

#endif
