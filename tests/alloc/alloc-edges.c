// SPDX-License-Identifier: Apache-2.0
/*
 * libotelprofd-alloc.so's edge cases, preloaded with OTELPROFD_ALLOC_SAMPLE=1 (a mean of one byte:
 * every allocation is sampled), read through its statistics (otelprofd_alloc_stats, found with dlsym):
 * - a realloc that fails keeps the old sampled block live: no free fired, its bytes intact, its own
 *   free fires later;
 * - a realloc that succeeds moves a sampled block (its bytes copied), fires its free and samples the
 *   new size; realloc(p, 0) fires its free;
 * - a fork()ed child freeing a sampled block it inherited fires free in the child only (the daemon
 *   counts it as a free of an allocation the child never made: docs/allocations.md); the parent's
 *   block stays sampled and its free fires in the parent.
 * Usage: alloc-edges
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct stats {
	_Atomic uint64_t sampled, weight, freed, dropped, bootstrap;
};

static struct stats *stats;
static int failures;

#define CHECK(cond, ...)                                                                                 \
	do {                                                                                             \
		if (!(cond)) {                                                                           \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                             \
			fprintf(stderr, __VA_ARGS__);                                                    \
			fputc('\n', stderr);                                                             \
			failures++;                                                                      \
		}                                                                                        \
	} while (0)

static bool intact(const unsigned char *p, size_t n, unsigned char fill)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != fill)
			return false;
	return true;
}

/* The size of a realloc no allocator grants, hidden from the compiler's size checks. */
static volatile size_t huge = SIZE_MAX / 2;

/* A 100-byte block filled with fill, and the library's counters once it is made. */
static unsigned char *filled_block(unsigned char fill, uint64_t *sampled, uint64_t *freed)
{
	unsigned char *p = malloc(100);

	if (!p) {
		fprintf(stderr, "FAIL: malloc(100) failed\n");
		exit(1);
	}
	memset(p, fill, 100);
	*sampled = stats->sampled;
	*freed = stats->freed;
	return p;
}

static void failed_realloc(void)
{
	uint64_t sampled, freed;
	unsigned char *p = filled_block(0xa5, &sampled, &freed), *q;

	errno = 0;
	q = realloc(p, huge);
	CHECK(!q && errno == ENOMEM, "realloc(p, SIZE_MAX / 2) returned %p (errno %d)", (void *)q, errno);
	CHECK(stats->freed == freed, "a failed realloc fired free (%llu frees, %llu before)",
	      (unsigned long long)stats->freed, (unsigned long long)freed);
	CHECK(stats->sampled == sampled, "a failed realloc was sampled");
	CHECK(intact(p, 100, 0xa5), "a failed realloc changed the old block");
	free(p);
	CHECK(stats->freed == freed + 1, "the old block's free after a failed realloc did not fire");
	printf("failed realloc: the old block stayed sampled, its free fired once, later\n");
}

static void moved_realloc(void)
{
	uint64_t sampled, freed;
	unsigned char *p = filled_block(0x5a, &sampled, &freed), *q;

	q = realloc(p, 5000);
	CHECK(q, "realloc(p, 5000) failed");
	CHECK(q && intact(q, 100, 0x5a), "realloc lost the block's bytes");
	CHECK(stats->freed == freed + 1, "a sampled block's realloc did not fire its free");
	CHECK(stats->sampled == sampled + 1, "the new size was not sampled");
	q = realloc(q, 0);
	CHECK(stats->freed == freed + 2, "realloc(p, 0) did not fire free");
	free(q); /* NULL from glibc's realloc(p, 0) */
	printf("realloc: a sampled block moved with its bytes, its free fired; realloc(p, 0) fired free\n");
}

static void inherited_free(void)
{
	void *p = malloc(64);
	uint64_t freed;
	int status;
	pid_t child;

	CHECK(p, "malloc(64) failed");
	freed = stats->freed;
	fflush(stdout);
	child = fork();
	if (child == 0) {
		free(p);
		_exit(stats->freed == freed + 1 ? 0 : 1);
	}
	CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && !WEXITSTATUS(status),
	      "the child's free of an inherited sampled block did not fire in the child");
	CHECK(stats->freed == freed, "the child's free changed the parent's statistics");
	free(p);
	CHECK(stats->freed == freed + 1, "the parent's free of the block did not fire");
	printf("fork: the child's free of an inherited block fired in the child, the parent's in the parent\n");
}

int main(void)
{
	void *probe;

	stats = dlsym(RTLD_DEFAULT, "otelprofd_alloc_stats");
	if (!stats) {
		fprintf(stderr, "FAIL: otelprofd_alloc_stats not found: is libotelprofd-alloc.so preloaded?\n");
		return 1;
	}
	probe = malloc(16); /* the thread's first allocation seeds its generator */
	free(probe);
	failed_realloc();
	moved_realloc();
	inherited_free();
	CHECK(stats->dropped == 0, "%llu sampled allocations dropped", (unsigned long long)stats->dropped);
	return failures ? 1 : 0;
}
