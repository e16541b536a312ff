/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of the option parser share: options.c (flags, the configuration file, the checks
 * between options), export_flags.c (the collector's flags and the OTEL_EXPORTER_OTLP_* variables
 * under them) and options_help.c (--help). Nothing outside config/ includes it.
 */
#ifndef OTELPROFD_OPTIONS_PARTS_H
#define OTELPROFD_OPTIONS_PARTS_H

#include <stdbool.h>
#include <stdio.h>

#include "config/options.h"

/* The ids of the long-only options (getopt's val; the others are their short letter). */
enum {
	OPT_FOLLOW_CHILDREN = 0x100,
	OPT_INCLUDE_IDLE,
	OPT_TOP,
	OPT_RINGBUF_SIZE,
	OPT_MAX_STACKS,
	OPT_MAX_SAMPLES,
	OPT_CGROUP,
	OPT_CONTAINER,
	OPT_COMMAND_LINE,
	OPT_ENDPOINT,
	OPT_PROTOCOL,
	OPT_HEADERS,
	OPT_INSECURE,
	OPT_CA_FILE,
	OPT_CLIENT_CERT,
	OPT_CLIENT_KEY,
	OPT_COMPRESSION,
	OPT_TIMEOUT,
	OPT_EXPORT_INTERVAL,
	OPT_MAX_MESSAGE_SIZE,
	OPT_QUEUE_SIZE,
	OPT_QUEUE_BYTES,
	OPT_KUBERNETES,
	OPT_METRICS_ADDRESS,
	OPT_STATS_INTERVAL,
	OPT_CONFIG,
	OPT_CHECK_CONFIG,
	OPT_STACK_COPY,
	OPT_SYMBOL_CACHE,
	OPT_MAX_CPU,
	OPT_NO_TRACE_CONTEXT,
	OPT_NO_JVM_ATTACH,
	OPT_OFF_CPU,
	OPT_OFF_CPU_THRESHOLD,
	OPT_OFF_CPU_PROBABILITY,
	OPT_OFF_CPU_MAX_INFLIGHT,
	OPT_FORMAT,
	OPT_ALLOC,
	OPT_ALLOC_SAMPLE,
	OPT_ALLOC_MAX_LIVE,
	OPT_INTERVAL_MEMORY,
	OPT_MEMORY_LIMIT,
	OPT_LAST,
};

/* arg as a number from min to max into *value: 0, or -ERANGE / -EINVAL after a message on err naming --name. */
int options_number_value(const char *name, const char *arg, unsigned long long min, unsigned long long max,
			 unsigned long long *value, FILE *err);

/* Sets the export flag c from arg; false when c is not one of them. *bad tells a usage error (said on err). */
bool export_flags_apply(struct export_config *e, int c, const char *arg, FILE *err, bool *bad);
/* Whether an OTEL_EXPORTER_OTLP_[PROFILES_]* variable sets what option c sets, so a file entry yields to it. */
bool export_flags_environment_sets(int c);
/* otel_env_apply() under the flags and the file; an error about an option the configuration file set
 * is located at its line (line[c], 0 where the file did not set c). 0, or what otel_env_apply() returned. */
int export_flags_apply_environment(struct options *opts, const unsigned *line, FILE *err);

/* The --help text. */
void options_print_help(FILE *out);

#endif
