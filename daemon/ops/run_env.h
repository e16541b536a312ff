/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a run takes from its environment rather than its flags: the tests' knobs, and the paths a
 * service's unit or a user sets. Read once at start by main.c.
 */
#ifndef OTELPROFD_RUN_ENV_H
#define OTELPROFD_RUN_ENV_H

#include <stdint.h>

/* Tests only: the milliseconds a knob such as OTELPROFD_TEST_OPEN_DELAY_MS (every module open that
 * much slower) or OTELPROFD_TEST_TURN_DELAY_MS (each ring-buffer read held back that long) asks for;
 * 0 when it is not set. Also a knob's number that is no time: OTELPROFD_TEST_LOG_QUEUE_BYTES (the log
 * writer's queue, log.h). */
uint64_t run_env_test_ms(const char *name);

/*
 * Where the kernel's symbols are saved for the next run of this boot (symbolizer/kallsyms_cache.h):
 * OTELPROFD_KALLSYMS_CACHE (a file; empty: none), else kernel/kallsyms in systemd's CacheDirectory
 * ($CACHE_DIRECTORY, the service's) or, for root, in /var/cache/otelprofd (the DaemonSet's emptyDir,
 * mode 0777: the cache's own 0700 directory inside is what makes it trusted); otherwise NULL. path
 * holds PATH_MAX bytes and is what is returned.
 */
const char *run_env_kallsyms_cache(char *path);

/* The allocation sampler that --alloc attaches at start and preloads into a program it starts:
 * OTELPROFD_ALLOC_LIB, else the installed one. */
const char *run_env_alloc_library(void);

#endif
