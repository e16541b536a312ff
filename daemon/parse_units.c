// SPDX-License-Identifier: Apache-2.0
#include "parse_units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int parse_uint(const char *text, unsigned long long min, unsigned long long max,
	       unsigned long long *value)
{
	unsigned long long v;
	char *end;

	if (!text || !*text || *text == '-' || *text == '+' || *text == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*value = v;
	return 0;
}

int parse_duration(const char *text, uint64_t *ns)
{
	static const struct {
		const char *suffix;
		double scale;
	} units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
		{ "m", 60e9 }, { "h", 3600e9 }, { "", 1e9 },
	};
	double v, total;
	char *end;

	/* Digits and a decimal point only: strtod() would also take "inf", "1e3" and hex. */
	if (!text || !*text || strspn(text, "0123456789.") != strcspn(text, "nsumh"))
		return -EINVAL;
	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || !isfinite(v) || v < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix))
			continue;
		total = v * units[i].scale;
		if (total >= 1e19) /* past what a uint64 of nanoseconds holds (584 years) */
			return -EINVAL;
		if (v > 0 && total < 1) /* not 0, which means "no limit" for some options */
			return -EINVAL;
		*ns = (uint64_t)total;
		return 0;
	}
	return -EINVAL;
}

int parse_size(const char *text, size_t *bytes)
{
	return parse_size_plain_scale(text, 1, bytes);
}

int parse_size_plain_scale(const char *text, size_t plain_scale, size_t *bytes)
{
	static const struct {
		const char *suffix;
		unsigned long long scale;
	} units[] = {
		{ "", 0 /* plain_scale */ }, { "B", 1 }, { "K", 1ULL << 10 }, { "KiB", 1ULL << 10 }, { "M", 1ULL << 20 },
		{ "MiB", 1ULL << 20 }, { "G", 1ULL << 30 }, { "GiB", 1ULL << 30 },
	};
	unsigned long long v;
	char *end;

	if (!text || !isdigit((unsigned char)*text))
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		unsigned long long scale = units[i].scale ? units[i].scale : plain_scale;

		if (strcmp(end, units[i].suffix))
			continue;
		if (!scale || v > SIZE_MAX / scale)
			return -EINVAL;
		*bytes = (size_t)(v * scale);
		return 0;
	}
	return -EINVAL;
}
