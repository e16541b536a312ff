// SPDX-License-Identifier: Apache-2.0
/*
 * The allocation workload (tests/integration/test_alloc.py): allocation sites with known bytes, run
 * under libotelprofd-alloc.so. Each site counts the bytes it asks for (a realloc's new size counts
 * as a new allocation, as the library counts it) and prints "SITE BYTES LIVE" at the end: LIVE is
 * what it still holds (leaked). The parent's sites:
 *   leak_small   64-byte blocks, kept            grow_realloc  buffers grown by realloc, freed
 *   leak_big     40,000-byte blocks, kept        thread_site   four threads' 256-byte blocks, freed
 *   churn_free   blocks of 1 to 4,096 bytes, freed at once
 *   leak_inherited  96-byte blocks allocated before the fork, kept by the parent; the child frees
 *                   its copies (frees of sampled blocks the child never allocated: the parent's
 *                   in-use bytes must stay)
 * and a fork()ed child (named allocs-child) with child_leak (48-byte blocks, kept) and child_free.
 * Usage: allocs [wait]   (wait: read a line on stdin before allocating)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MB (1000 * 1000)
#define NOINLINE __attribute__((noinline))

static uint64_t seed = 88172645463325252ULL;

static uint64_t next(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

/* A pause after every 256 KB a thread allocates (at most about 50 MB a second, 3,000 samples at
 * a 16 KiB mean): the daemon keeps up on a loaded machine, and no record is lost. */
static __thread uint64_t paced;

static void pace(uint64_t bytes)
{
	paced += bytes;
	if (paced >= 256 * 1024) {
		struct timespec t = { 0, 5000000 };

		paced = 0;
		nanosleep(&t, NULL);
	}
}

static void touch(void *p)
{
	if (!p)
		abort();
	*(volatile char *)p = 1;
}

/* n blocks of size bytes, kept in keep[]. Called by each site, which stays a frame of its own (built
 * without sibling calls: tests/workloads/meson.build). */
NOINLINE static uint64_t hold(void **keep, unsigned long n, size_t size)
{
	for (unsigned long i = 0; i < n; i++) {
		keep[i] = malloc(size);
		touch(keep[i]);
		pace(size);
	}
	return (uint64_t)size * n;
}

/* Blocks of size bytes (0: 1 to 4,096 bytes, at random) freed at once, until total bytes. */
NOINLINE static uint64_t churn(uint64_t total, size_t size)
{
	uint64_t bytes = 0;

	while (bytes < total) {
		size_t n = size ? size : 1 + next() % 4096;
		void *p = malloc(n);

		touch(p);
		free(p);
		bytes += n;
		pace(n);
	}
	return bytes;
}

NOINLINE static uint64_t leak_small(void **keep, unsigned long n)
{
	return hold(keep, n, 64);
}

NOINLINE static uint64_t leak_big(void **keep, unsigned long n)
{
	return hold(keep, n, 40000);
}

NOINLINE static uint64_t churn_free(uint64_t total)
{
	return churn(total, 0);
}

NOINLINE static uint64_t grow_realloc(uint64_t total)
{
	uint64_t bytes = 0;

	while (bytes < total) {
		size_t size = 1024;
		char *p = malloc(size);

		touch(p);
		bytes += size;
		while (size < (1 << 20)) {
			size *= 2;
			p = realloc(p, size);
			touch(p);
			bytes += size;
			pace(size);
		}
		free(p);
	}
	return bytes;
}

NOINLINE static void *thread_site(void *arg)
{
	*(uint64_t *)arg = churn(10 * MB, 256);
	return NULL;
}

NOINLINE static uint64_t child_leak(void **keep, unsigned long n)
{
	return hold(keep, n, 48);
}

NOINLINE static uint64_t leak_inherited(void **keep, unsigned long n)
{
	return hold(keep, n, 96);
}

NOINLINE static void free_inherited(void **blocks, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		free(blocks[i]);
}

NOINLINE static uint64_t child_free(uint64_t total)
{
	return churn(total, 1000);
}

int main(int argc, char **argv)
{
	static void *small[40 * MB / 64], *big[1000], *child_blocks[20 * MB / 48], *inherited[40 * MB / 96];
	uint64_t per_thread[4] = { 0 }, threads_total = 0, b, inherited_bytes;
	pthread_t t[4];
	char line[16];
	pid_t child;
	int status;

	if (argc > 1 && !strcmp(argv[1], "wait") && !fgets(line, sizeof(line), stdin))
		return 1;
	inherited_bytes = leak_inherited(inherited, sizeof(inherited) / sizeof(inherited[0]));
	child = fork();
	if (child == 0) {
		uint64_t leaked, freed;

		prctl(PR_SET_NAME, "allocs-child");
		free_inherited(inherited, sizeof(inherited) / sizeof(inherited[0]));
		leaked = child_leak(child_blocks, sizeof(child_blocks) / sizeof(child_blocks[0]));
		freed = child_free(20 * MB);
		printf("child_leak %llu %llu\nchild_free %llu 0\n", (unsigned long long)leaked,
		       (unsigned long long)leaked, (unsigned long long)freed);
		fflush(stdout);
		_exit(0);
	}
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, thread_site, &per_thread[i]))
			return 1;
	b = leak_small(small, sizeof(small) / sizeof(small[0]));
	printf("leak_small %llu %llu\n", (unsigned long long)b, (unsigned long long)b);
	printf("leak_inherited %llu %llu\n", (unsigned long long)inherited_bytes, (unsigned long long)inherited_bytes);
	b = leak_big(big, sizeof(big) / sizeof(big[0]));
	printf("leak_big %llu %llu\n", (unsigned long long)b, (unsigned long long)b);
	printf("churn_free %llu 0\n", (unsigned long long)churn_free(40 * MB));
	printf("grow_realloc %llu 0\n", (unsigned long long)grow_realloc(40 * MB));
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		threads_total += per_thread[i];
	}
	printf("thread_site %llu 0\n", (unsigned long long)threads_total);
	fflush(stdout);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	return 0;
}
