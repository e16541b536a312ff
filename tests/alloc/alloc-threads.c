// SPDX-License-Identifier: Apache-2.0
/*
 * libotelprofd-alloc.so under a threaded workload, preloaded (tests/alloc/meson.build): four threads
 * and a fork()ed child allocate through every entry point, free everything, and count their own
 * bytes (a realloc's new size counts as a new allocation, as the library counts it). The library's
 * own statistics (otelprofd_alloc_stats, found with dlsym) must then agree: every sampled pointer
 * freed again (but for the C library's own few), none dropped, and the sampled weights within 3% of the bytes allocated.
 * Usage: alloc-threads [expect-off]  (expect-off: OTELPROFD_ALLOC_SAMPLE=0, nothing sampled)
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 60000
#define LIVE 64

struct stats {
	_Atomic uint64_t sampled, weight, freed, dropped, bootstrap;
};

static _Atomic uint64_t total_bytes;

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One allocation through entry point (i % 7), of size bytes; counted in *bytes. */
static void *allocate(unsigned i, size_t size, uint64_t *bytes)
{
	void *p = NULL;

	switch (i % 7) {
	case 0: p = malloc(size); break;
	case 1: p = calloc(1, size); break;
	case 2: if (posix_memalign(&p, 64, size)) p = NULL; break;
	case 3: p = aligned_alloc(32, (size + 31) & ~(size_t)31); size = (size + 31) & ~(size_t)31; break;
	case 4: p = memalign(128, size); break;
	case 5: p = valloc(size); break;
	default: p = malloc(size / 2 + 1); size = size / 2 + 1; break;
	}
	if (!p)
		abort();
	memset(p, 1, size < 64 ? size : 64);
	*bytes += size;
	return p;
}

static void *work(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1, bytes = 0;
	void *live[LIVE] = { 0 };

	for (unsigned i = 0; i < ROUNDS; i++) {
		unsigned slot = (unsigned)(next(&seed) % LIVE);
		size_t size = 1 + next(&seed) % 8192;

		if (live[slot] && i % 5 == 0) {
			/* realloc growth: the new size is a new allocation */
			void *p = realloc(live[slot], size * 2);

			if (!p)
				abort();
			live[slot] = p;
			bytes += size * 2;
			continue;
		}
		free(live[slot]);
		live[slot] = allocate(i, size, &bytes);
	}
	for (unsigned i = 0; i < LIVE; i++)
		free(live[i]);
	atomic_fetch_add(&total_bytes, bytes);
	return NULL;
}

/* The C library's own allocations that may stay live: a thread's DTV (kept with its cached stack). */
#define LIBC_LIVE THREADS

static int check(const struct stats *live, uint64_t bytes, int off, const char *who)
{
	struct stats copy = { 0 }, *st = &copy;
	double ratio;

	/* A copy first: printing allocates stdout's buffer, which may be sampled. */
	memcpy(&copy, (const void *)live, sizeof(copy));
	ratio = bytes ? (double)st->weight / (double)bytes : 0;

	printf("%s: %llu bytes, %llu sampled, estimate/truth %.4f, freed %llu, dropped %llu, bootstrap %llu\n",
	       who, (unsigned long long)bytes, (unsigned long long)st->sampled, ratio,
	       (unsigned long long)st->freed, (unsigned long long)st->dropped, (unsigned long long)st->bootstrap);
	if (off)
		return st->sampled == 0 && st->freed == 0 ? 0 : 1;
	if (st->sampled < 1000 || st->dropped || st->sampled - st->freed > LIBC_LIVE || ratio < 0.97 || ratio > 1.03) {
		fprintf(stderr, "%s: the library's statistics disagree with the workload's\n", who);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const struct stats *st = dlsym(RTLD_DEFAULT, "otelprofd_alloc_stats");
	int off = argc > 1 && !strcmp(argv[1], "expect-off");
	pthread_t t[THREADS];
	int status, r;
	pid_t child;

	if (!st) {
		fprintf(stderr, "libotelprofd-alloc.so is not preloaded\n");
		return 1;
	}
	for (uintptr_t i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, work, (void *)(i + 1)))
			return 1;
	/* A child forked while the threads allocate: it keeps allocating, alone, with its own stream. */
	child = fork();
	if (child == 0) {
		struct stats before = { 0 };
		uint64_t bytes = atomic_exchange(&total_bytes, 0);

		(void)bytes;
		memcpy(&before, st, sizeof(before));
		work((void *)99);
		{
			struct stats own = { 0 };

			own.sampled = st->sampled - before.sampled;
			own.weight = st->weight - before.weight;
			own.freed = st->freed - before.freed;
			own.dropped = st->dropped - before.dropped;
			/* A pointer the parent's threads had sampled and freed in their copy does not
			 * matter here: the child frees only its own. */
			r = check(&own, atomic_load(&total_bytes), off, "child");
			fflush(stdout);
			_exit(r);
		}
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) {
		fprintf(stderr, "the forked child failed\n");
		return 1;
	}
	r = check(st, atomic_load(&total_bytes), off, "parent");
	return r || WEXITSTATUS(status);
}
