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

/* The file or directory named by the variable env (empty: none), else name in the service's cache
 * directory or root's; NULL when none. */
static const char *cache_path(char *path, const char *env, const char *name)
{
	const char *v = getenv(env), *dir = getenv("CACHE_DIRECTORY");
	int n;

	if (v)
		n = *v ? snprintf(path, PATH_MAX, "%s", v) : 0;
	else if (dir && *dir) /* a list when the unit names several: the first */
		n = snprintf(path, PATH_MAX, "%.*s/%s", (int)strcspn(dir, ":"), dir, name);
	else if (geteuid() == 0)
		n = snprintf(path, PATH_MAX, "/var/cache/otelprofd/%s", name);
	else
		return NULL;
	return n > 0 && n < PATH_MAX ? path : NULL;
}

const char *run_env_kallsyms_cache(char *path)
{
	return cache_path(path, "OTELPROFD_KALLSYMS_CACHE", "kernel/kallsyms");
}

const char *run_env_debug_plain(char *path)
{
	return cache_path(path, "OTELPROFD_DEBUG_CACHE", "debug");
}

const char *run_env_alloc_library(void)
{
	const char *path = getenv("OTELPROFD_ALLOC_LIB");

	return path && *path ? path : OTELPROFD_ALLOC_LIB;
}
