/*
 * The end of a run without a collector: the profile written in the format and to the place the flags
 * name (-o, --format, --top), and with --off-cpu and folded output the waits to a second file beside
 * it. The profile is borrowed.
 */
#ifndef OTELPROFD_WRITE_OUTPUT_H
#define OTELPROFD_WRITE_OUTPUT_H

#include "config/options.h"
#include "profile/profile.h"

/* 0, or -errno of the first write that failed. */
int write_output(const struct options *opts, const struct profile *p);

#endif
