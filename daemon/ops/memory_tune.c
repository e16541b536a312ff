// SPDX-License-Identifier: Apache-2.0
#include "ops/memory_tune.h"

#include <malloc.h>

/* Arenas for the daemon's threads (the exporter's sender, gRPC's, the metrics server, the JVM attach
 * and debuginfod workers): the main thread's and one shared, rather than one per core. */
#define MEMORY_ARENAS 2
/* Blocks from this size up are mapped on their own and unmapped when freed. */
#define MEMORY_MMAP_THRESHOLD (128 << 10)
/* Free memory at the heap's top past this is returned at once. */
#define MEMORY_TRIM_THRESHOLD (128 << 10)

void memory_tune_start(void)
{
	/* Settings the allocator refuses (another allocator, a sanitizer's) leave its defaults. */
	(void)mallopt(M_ARENA_MAX, MEMORY_ARENAS);
	(void)mallopt(M_MMAP_THRESHOLD, MEMORY_MMAP_THRESHOLD);
	(void)mallopt(M_TRIM_THRESHOLD, MEMORY_TRIM_THRESHOLD);
}

void memory_tune_release(void)
{
	(void)malloc_trim(0);
}
