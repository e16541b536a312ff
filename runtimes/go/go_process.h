/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Go room's process check: is a process's executable a Go binary of a release whose runtime
 * layout we know (Go 1.19 to 1.26), and where are its goroutines' labels. The release is read from
 * the binary's .go.buildinfo section, which a stripped binary (-ldflags='-s -w') keeps, so no
 * symbol or DWARF is needed: the offsets come from a per-release table (runtimes/README.md).
 */
#ifndef OTELPROFD_GO_PROCESS_H
#define OTELPROFD_GO_PROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"

/* Bytes of .go.buildinfo read (its header and the version string). */
#define GO_BUILDINFO_READ 64

/*
 * The Go release of an ELF file's .go.buildinfo (header bytes, n of them): its minor version
 * (19 for "go1.19.8"), or -ENOENT (not a Go 1.18+ buildinfo) / -EINVAL (an unreadable version).
 */
int go_process_buildinfo_minor(const uint8_t *buildinfo, size_t n);

/* The BPF map entry of a Go release (minor version) into *out (start_ns and g_tls left as they
 * are): 0, or -ENOTSUP for a release outside the table. */
int go_process_layout(int minor, struct otelprof_go_proc *out);

/*
 * The entry of process pid (started at start_ns) from its executable (/proc/PID/exe): 0, -ENOENT
 * (not a Go binary), -ENOTSUP (a Go release outside the table), or -errno (unreadable).
 */
int go_process_check(uint32_t pid, uint64_t start_ns, struct otelprof_go_proc *out);

/* How the record path hands a Go process's entry to the BPF map (sampler_publish_go()). */
typedef int (*go_publish_fn)(void *ctx, uint32_t pid, const struct otelprof_go_proc *entry);

struct go_process_counters {
	uint64_t published;      /* Go processes whose labels BPF reads */
	uint64_t unknown;        /* Go processes of a release outside the table (no labels) */
	uint64_t publish_failed; /* entries the BPF map refused */
};

#endif
