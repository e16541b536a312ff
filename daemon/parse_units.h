/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The numbers a flag, the configuration file or an OTEL_* variable gives: counts, durations and
 * byte sizes. Shared by config/ (options.c, export_flags.c) and export/otel_env.c, which include
 * this rather than each other.
 */
#ifndef OTELPROFD_PARSE_UNITS_H
#define OTELPROFD_PARSE_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* A decimal unsigned integer in [min, max]. Returns 0, -EINVAL or -ERANGE. */
int parse_uint(const char *text, unsigned long long min, unsigned long long max, unsigned long long *value);
/* "30s", "500ms", "2m", "1h", "1.5s", or plain seconds. Returns 0 or -EINVAL. */
int parse_duration(const char *text, uint64_t *ns);
/* A byte size: "1048576", "512KiB", "16MiB", "1GiB" (also K, M, G). 0 or -EINVAL. */
int parse_size(const char *text, size_t *bytes);
/* The same, a number without a unit counting plain_scale bytes (1024: "4096" is 4MiB). */
int parse_size_plain_scale(const char *text, size_t plain_scale, size_t *bytes);

#endif
