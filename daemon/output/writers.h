/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon/output/: a profile as bytes. The top table, folded stacks, pprof, OTLP encoding and the HTML
 * flame graph. May include profile/ and the top-level helpers.
 */
/* Output formats written from a struct profile. Each returns 0 or a negative errno. */
#ifndef OTELPROFD_WRITERS_H
#define OTELPROFD_WRITERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

/* Folded stacks ("process;root;...;leaf count"), kernel frames suffixed "_[k]", sorted. */
int write_folded(const struct profile *p, FILE *out);
/* The same, written to path whole or not at all (see output_file.h). */
int write_folded_file(const struct profile *p, const char *path);
/*
 * Off-CPU waits (--off-cpu) folded the same way, weighted by microseconds away (scaled by the
 * sampling): "process;root;...;leaf microseconds". write_folded() leaves them out.
 */
int write_folded_off_cpu(const struct profile *p, FILE *out);
int write_folded_off_cpu_file(const struct profile *p, const char *path);
/* The off-CPU file beside a folded file: "x.folded" -> "x.off-cpu.folded". 0 or -ENAMETOOLONG. */
int folded_off_cpu_path(const char *path, char *buf, size_t size);
/* The samples of one view (profile.h) folded the same way, weighted by their value there (objects,
 * bytes; off-CPU: microseconds), to a stream or a file; the file beside a folded file for a view:
 * "x.folded" -> "x.alloc_space.folded" ("x.off-cpu.folded" for off-CPU). */
int write_folded_view(const struct profile *p, enum pf_view view, FILE *out);
int write_folded_view_file(const struct profile *p, enum pf_view view, const char *path);
int folded_view_path(const char *path, enum pf_view view, char *buf, size_t size);
/* The top rows functions by self samples, with self and total percentages; with off-CPU waits in
 * the profile, a second section ranks functions by time away; with allocations, two more rank them
 * by bytes allocated and bytes in use through them. */
int write_top(const struct profile *p, unsigned rows, FILE *out);
/* A self-contained HTML page with an interactive flame graph, one view per sample type collected
 * (on-CPU, off-CPU, allocated and in-use bytes and objects). */
int write_html(const struct profile *p, FILE *out);
/* An uncompressed pprof Profile message; *buf is malloc'ed and owned by the caller. */
int encode_pprof(const struct profile *p, uint8_t **buf, size_t *len);
/* A gzipped pprof file, written to path whole or not at all (see output_file.h). */
int write_pprof_file(const struct profile *p, const char *path);
/* The same gzipped pprof to a stream (standard output). */
int write_pprof(const struct profile *p, FILE *out);

#endif
