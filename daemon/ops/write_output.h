/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The end of a run without a collector: the profile written in the format and to the place the flags
 * name (-o, --format, --top), and with --off-cpu and folded output the waits to a second file beside
 * it; a file whose path fails at the end goes to a temporary directory instead. The profile is borrowed.
 */
#ifndef OTELPROFD_WRITE_OUTPUT_H
#define OTELPROFD_WRITE_OUTPUT_H

#include "config/options.h"
#include "profile/profile.h"

/* 0, or -errno of the first write that failed. Says what it wrote, or why it failed; a file that
 * could not be written at its path is written to a new file in $TMPDIR, /var/tmp or /tmp, whose path
 * is said (still a failure: -errno of the first write). */
int write_output(const struct options *opts, const struct profile *p);
/* Before sampling: can the output file be written? 0, or -errno after a one-line error. */
int write_output_check(const struct options *opts);

#endif
