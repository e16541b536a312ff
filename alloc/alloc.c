// SPDX-License-Identifier: Apache-2.0
/*
 * libotelprofd-alloc.so: samples a program's heap allocations by bytes and fires the USDT probes
 * otel_memory:alloc(ptr, size, weight) and otel_memory:free(ptr) that `otelprofd --alloc` (or any
 * tracer) attaches to. Preloaded (LD_PRELOAD), it stands in for malloc, calloc, realloc, free,
 * posix_memalign, aligned_alloc, memalign, valloc and pvalloc, and calls the next definitions
 * (the C library's, or another allocator's) found with dlsym(RTLD_NEXT). C++'s operator new and
 * delete call malloc and free.
 *
 * An allocation costs a thread-local subtraction unless it holds the next sampled byte (poisson.h:
 * mean OTELPROFD_ALLOC_SAMPLE bytes, 512 KiB by default, 0 turns sampling off). A sampled one goes
 * into the set of sampled pointers (sampled_set.h) and fires alloc; free() fires only for pointers
 * of that set. Nothing here allocates or locks: threads share only the set (compare-and-swap) and
 * counters; a fork()ed child keeps working with its copy (its thread reseeds its generator).
 *
 * Until dlsym() has found the real functions (the loader and dlsym itself allocate before that),
 * allocations come from a static bootstrap arena and are never given back.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "poisson.h"
#include "sampled_set.h"
#include "usdt.h"

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Sampled live pointers tracked: 2^16 (512 KiB of zero pages until used). At the default mean they
 * stand for 32 GiB of live heap; beyond, sampled allocations are dropped (counted). */
#define SET_SLOTS (1u << 16)
/* The bootstrap arena: what the loader and dlsym allocate before the real functions are known. */
#define ARENA_BYTES (64u * 1024u)
#define ARENA_ALIGN 16u

/* What the library did, for tests and debugging (read with dlsym). Updated on the slow path only. */
struct otelprofd_alloc_stats {
	_Atomic uint64_t sampled;   /* allocations sampled (alloc fired) */
	_Atomic uint64_t weight;    /* sum of their weights: the estimate of the bytes allocated */
	_Atomic uint64_t freed;     /* sampled pointers freed (free fired) */
	_Atomic uint64_t dropped;   /* sampled allocations not reported: the pointer set was full */
	_Atomic uint64_t bootstrap; /* allocations served by the bootstrap arena */
};
EXPORT struct otelprofd_alloc_stats otelprofd_alloc_stats;

static struct {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
} real;

enum { UNRESOLVED, RESOLVING, READY };
static _Atomic int state = UNRESOLVED;
static uint64_t mean; /* 0: sampling off; set before state turns READY */

static _Atomic uintptr_t set_slots[SET_SLOTS];
static struct sampled_set set = { .slots = set_slots, .mask = SET_SLOTS - 1 };

static _Alignas(ARENA_ALIGN) unsigned char arena[ARENA_BYTES];
static _Atomic size_t arena_used;

/* Per thread: bytes until the next sampled byte, and the generator. Initial-exec TLS: reading it
 * never allocates (a preloaded library's TLS is in the static block). */
struct thread_state {
	int64_t left;
	struct alloc_rng rng;
	pid_t pid; /* the process the generator was seeded in: a forked child reseeds */
	bool seeded;
};
static __thread struct thread_state ts __attribute__((tls_model("initial-exec")));

static uint64_t mean_from_env(void)
{
	const char *v = getenv("OTELPROFD_ALLOC_SAMPLE");
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return ALLOC_DEFAULT_MEAN;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || *end)
		return ALLOC_DEFAULT_MEAN;
	return n;
}

static void resolve(void)
{
	int expected = UNRESOLVED;

	if (!atomic_compare_exchange_strong(&state, &expected, RESOLVING))
		return; /* another call resolves (or did): the arena serves meanwhile */
	real.malloc = dlsym(RTLD_NEXT, "malloc");
	real.free = dlsym(RTLD_NEXT, "free");
	real.calloc = dlsym(RTLD_NEXT, "calloc");
	real.realloc = dlsym(RTLD_NEXT, "realloc");
	real.posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	real.aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	real.memalign = dlsym(RTLD_NEXT, "memalign");
	real.valloc = dlsym(RTLD_NEXT, "valloc");
	real.pvalloc = dlsym(RTLD_NEXT, "pvalloc");
	mean = mean_from_env();
	if (!real.malloc || !real.free || !real.calloc || !real.realloc) {
		atomic_store(&state, UNRESOLVED); /* nothing to stand in for: keep the arena (cannot happen) */
		return;
	}
	atomic_store(&state, READY);
}

__attribute__((constructor)) static void alloc_init(void)
{
	resolve();
}

static bool ready(void)
{
	if (LIKELY(atomic_load_explicit(&state, memory_order_acquire) == READY))
		return true;
	resolve();
	return atomic_load_explicit(&state, memory_order_acquire) == READY;
}

/* The arena: a 16-byte header holding the size, then the block. NULL when exhausted. */
static void *arena_alloc(size_t size, size_t align)
{
	size_t need, at, start;

	if (align < ARENA_ALIGN)
		align = ARENA_ALIGN;
	if (size > ARENA_BYTES || align > 4096)
		return NULL;
	need = size + align + ARENA_ALIGN;
	at = atomic_fetch_add(&arena_used, need);
	if (at + need > ARENA_BYTES)
		return NULL;
	start = ((uintptr_t)arena + at + ARENA_ALIGN + align - 1) & ~(uintptr_t)(align - 1);
	((size_t *)start)[-1] = size;
	atomic_fetch_add_explicit(&otelprofd_alloc_stats.bootstrap, 1, memory_order_relaxed);
	return (void *)start; /* zeroed: the arena is static and never reused */
}

static bool in_arena(const void *p)
{
	return (const unsigned char *)p >= arena && (const unsigned char *)p < arena + ARENA_BYTES;
}

static uint64_t seed_of(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)(uintptr_t)&ts ^ ((uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec) ^
	       ((uint64_t)getpid() << 32);
}

/* The thread's counter crossed a sampled byte (or the thread's first allocation): the allocation's
 * weight when it is sampled (and in the set), else 0. */
static __attribute__((noinline)) uint64_t sample_slow(void *p, size_t size)
{
	pid_t pid = getpid();
	uint64_t weight;

	if (!ts.seeded || ts.pid != pid) {
		bool first = !ts.seeded;

		alloc_rng_seed(&ts.rng, seed_of());
		ts.pid = pid;
		ts.seeded = true;
		if (first) { /* the first allocation starts the thread's process of sampled bytes */
			ts.left = (int64_t)alloc_poisson_next(&ts.rng, mean) - (int64_t)size;
			if (ts.left > 0)
				return 0;
		}
	}
	ts.left = (int64_t)alloc_poisson_next(&ts.rng, mean);
	if (!sampled_set_insert(&set, p)) {
		atomic_fetch_add_explicit(&otelprofd_alloc_stats.dropped, 1, memory_order_relaxed);
		return 0;
	}
	weight = alloc_weight(size, mean);
	atomic_fetch_add_explicit(&otelprofd_alloc_stats.sampled, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&otelprofd_alloc_stats.weight, weight, memory_order_relaxed);
	return weight;
}

/*
 * Every allocation passes here first: its bytes counted down, true when it holds the thread's next
 * sampled byte. The others then tail-call the real function: no frame of this library's own, no
 * work after it.
 */
static inline __attribute__((always_inline)) bool due(size_t size)
{
	if (UNLIKELY(!mean))
		return false;
	ts.left -= (int64_t)size;
	return UNLIKELY(ts.left <= 0);
}

/*
 * A due allocation, made: sampled unless it failed or the set is full. Inlined into each entry point
 * with its probe site, so a sampled allocation's stack starts at malloc (or calloc, ...) and goes
 * on in the caller. A failed one leaves the countdown at or under 0: the next allocation is due.
 */
static inline __attribute__((always_inline)) void *sampled(void *p, size_t size)
{
	uint64_t weight;

	if (p && (weight = sample_slow(p, size)))
		USDT3(otel_memory, alloc, p, size, weight);
	return p;
}

/* Before the block goes back: a sampled pointer fires free while it is still ours, so another
 * thread cannot get the same address and fire its alloc first. The inlined filter check is all an
 * unsampled pointer costs. */
static inline __attribute__((always_inline)) void forget(void *p)
{
	if (UNLIKELY(sampled_set_maybe(&set, p)) && sampled_set_remove(&set, p)) {
		atomic_fetch_add_explicit(&otelprofd_alloc_stats.freed, 1, memory_order_relaxed);
		USDT1(otel_memory, free, p);
	}
}

EXPORT void *malloc(size_t size)
{
	if (UNLIKELY(!ready()))
		return arena_alloc(size, ARENA_ALIGN);
	if (LIKELY(!due(size)))
		return real.malloc(size);
	return sampled(real.malloc(size), size);
}

EXPORT void free(void *p)
{
	if (UNLIKELY(in_arena(p)))
		return;
	forget(p);
	real.free(p); /* a pointer not from the arena came from real.malloc: ready() held (or it is NULL) */
}

EXPORT void *calloc(size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	if (UNLIKELY(!ready()))
		return arena_alloc(bytes, ARENA_ALIGN);
	if (LIKELY(!due(bytes)))
		return real.calloc(n, size);
	return sampled(real.calloc(n, size), bytes);
}

EXPORT void *realloc(void *old, size_t size)
{
	void *p;

	if (UNLIKELY(in_arena(old))) {
		size_t had = ((const size_t *)old)[-1];

		p = malloc(size);
		if (p)
			memcpy(p, old, had < size ? had : size);
		return p;
	}
	if (UNLIKELY(!ready()))
		return old ? NULL : arena_alloc(size, ARENA_ALIGN);
	forget(old);
	/* A new size is a new allocation (realloc(p, 0) frees p and may return NULL). */
	if (LIKELY(!due(size)))
		return real.realloc(old, size);
	return sampled(real.realloc(old, size), size);
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	int r;

	if (UNLIKELY(!ready() || !real.posix_memalign)) {
		*out = arena_alloc(size, align);
		return *out ? 0 : ENOMEM;
	}
	if (LIKELY(!due(size)))
		return real.posix_memalign(out, align, size);
	r = real.posix_memalign(out, align, size);
	if (!r)
		sampled(*out, size);
	return r;
}

/* The entry points of one size and an alignment: the same countdown, their own probe site. */
#define ALIGNED_ENTRY(name, align_min)                                                                   \
	EXPORT void *name(size_t align, size_t size)                                                     \
	{                                                                                                 \
		if (UNLIKELY(!ready() || !real.name))                                                    \
			return arena_alloc(size, align > (align_min) ? align : (align_min));             \
		if (LIKELY(!due(size)))                                                                  \
			return real.name(align, size);                                                   \
		return sampled(real.name(align, size), size);                                            \
	}

ALIGNED_ENTRY(aligned_alloc, ARENA_ALIGN)
ALIGNED_ENTRY(memalign, ARENA_ALIGN)

EXPORT void *valloc(size_t size)
{
	if (UNLIKELY(!ready() || !real.valloc))
		return arena_alloc(size, 4096);
	if (LIKELY(!due(size)))
		return real.valloc(size);
	return sampled(real.valloc(size), size);
}

EXPORT void *pvalloc(size_t size)
{
	if (UNLIKELY(!ready() || !real.pvalloc))
		return arena_alloc(size, 4096);
	if (LIKELY(!due(size)))
		return real.pvalloc(size);
	return sampled(real.pvalloc(size), size);
}
