// SPDX-License-Identifier: Apache-2.0
#include "ops/run_env.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t run_env_test_ms(const char *name)
{
	const char *v = getenv(name);

	return v ? strtoull(v, NULL, 10) : 0;
}

const char *run_env_kallsyms_cache(char *path)
{
	const char *v = getenv("OTELPROFD_KALLSYMS_CACHE"), *dir = getenv("CACHE_DIRECTORY");
	int n;

	if (v)
		n = snprintf(path, PATH_MAX, "%s", v);
	else if (dir && *dir) /* a list when the unit names several: the first */
		n = snprintf(path, PATH_MAX, "%.*s/kernel/kallsyms", (int)strcspn(dir, ":"), dir);
	else if (geteuid() == 0)
		n = snprintf(path, PATH_MAX, "/var/cache/otelprofd/kernel/kallsyms");
	else
		return NULL;
	return n > 0 && n < PATH_MAX ? path : NULL;
}

const char *run_env_alloc_library(void)
{
	const char *path = getenv("OTELPROFD_ALLOC_LIB");

	return path && *path ? path : OTELPROFD_ALLOC_LIB;
}
