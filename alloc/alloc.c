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
#include <stddef.h>
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

/* The next definitions (dlsym(RTLD_NEXT)). Until they are known, each points at its boot_ stand-in
 * below, which resolves them or serves from the arena: an entry point's fast path calls through
 * them without checking whether they are ready. */
static void *boot_malloc(size_t size);
static void boot_free(void *p);
static void *boot_calloc(size_t n, size_t size);
static void *boot_realloc(void *old, size_t size);
static int boot_posix_memalign(void **out, size_t align, size_t size);
static void *boot_aligned_alloc(size_t align, size_t size);
static void *boot_memalign(size_t align, size_t size);
static void *boot_valloc(size_t size);
static void *boot_pvalloc(size_t size);

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
	size_t (*usable_size)(void *); /* malloc_usable_size: a sampled block's realloc copies it */
} real = {
	.malloc = boot_malloc,
	.free = boot_free,
	.calloc = boot_calloc,
	.realloc = boot_realloc,
	.posix_memalign = boot_posix_memalign,
	.aligned_alloc = boot_aligned_alloc,
	.memalign = boot_memalign,
	.valloc = boot_valloc,
	.pvalloc = boot_pvalloc,
};

enum { UNRESOLVED, RESOLVING, READY };
static _Atomic int state = UNRESOLVED;
static uint64_t mean; /* 0: sampling off; set before state turns READY */

static _Atomic uintptr_t set_slots[SET_SLOTS];
static struct sampled_set set = { .slots = set_slots, .mask = SET_SLOTS - 1 };

static _Alignas(ARENA_ALIGN) unsigned char arena[ARENA_BYTES];
static _Atomic size_t arena_used;

/* Per thread: the bytes before the next sampled byte, and the generator. Initial-exec TLS: reading
 * it never allocates (a preloaded library's TLS is in the static block). */
struct thread_state {
	uint64_t left; /* an allocation of more bytes holds the sampled byte (0: the next one is due) */
	struct alloc_rng rng;
	pid_t pid; /* the process the generator was seeded in: a forked child reseeds */
	bool seeded;
};
/* Named (not static) for due()'s assembly; hidden: nothing outside the library sees it. */
extern __thread struct thread_state otelprofd_alloc_ts __attribute__((tls_model("initial-exec"), visibility("hidden")));
__thread struct thread_state otelprofd_alloc_ts __attribute__((tls_model("initial-exec"), visibility("hidden")));
#define ts otelprofd_alloc_ts

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
	void *f;

	if (!atomic_compare_exchange_strong(&state, &expected, RESOLVING))
		return; /* another call resolves (or did): the arena serves meanwhile */
	if (!dlsym(RTLD_NEXT, "malloc") || !dlsym(RTLD_NEXT, "free") || !dlsym(RTLD_NEXT, "calloc") ||
	    !dlsym(RTLD_NEXT, "realloc")) {
		atomic_store(&state, UNRESOLVED); /* nothing to stand in for: keep the arena (cannot happen) */
		return;
	}
	mean = mean_from_env();
	/* Published free first: a block from a real function is then always given back to a real free.
	 * A function the next library lacks keeps its stand-in, which serves from the arena. */
#define PUBLISH(field, symbol)                                                                            \
	if ((f = dlsym(RTLD_NEXT, symbol)))                                                               \
		__atomic_store_n((void **)&real.field, f, __ATOMIC_RELEASE)
	PUBLISH(free, "free");
	PUBLISH(usable_size, "malloc_usable_size");
	PUBLISH(realloc, "realloc");
	PUBLISH(malloc, "malloc");
	PUBLISH(calloc, "calloc");
	PUBLISH(posix_memalign, "posix_memalign");
	PUBLISH(aligned_alloc, "aligned_alloc");
	PUBLISH(memalign, "memalign");
	PUBLISH(valloc, "valloc");
	PUBLISH(pvalloc, "pvalloc");
#undef PUBLISH
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
	sampled_set_pin(&set, (void *)start); /* free() and realloc() look at it (special()) */
	atomic_fetch_add_explicit(&otelprofd_alloc_stats.bootstrap, 1, memory_order_relaxed);
	return (void *)start; /* zeroed: the arena is static and never reused */
}

/* One unsigned compare: inlined into free() and realloc(). */
static inline bool in_arena(const void *p)
{
	return (uintptr_t)p - (uintptr_t)arena < ARENA_BYTES;
}

/* The stand-ins until the real functions are known: resolve them (once), else the arena. */
static void *boot_malloc(size_t size)
{
	return ready() && real.malloc != boot_malloc ? real.malloc(size) : arena_alloc(size, ARENA_ALIGN);
}

static void boot_free(void *p)
{
	/* Not from the arena: from a real function, published after real.free (or NULL). */
	if (!in_arena(p) && real.free != boot_free)
		real.free(p);
}

static void *boot_calloc(size_t n, size_t size)
{
	return ready() && real.calloc != boot_calloc ? real.calloc(n, size) : arena_alloc(n * size, ARENA_ALIGN);
}

static void *boot_realloc(void *old, size_t size)
{
	if (ready() && real.realloc != boot_realloc)
		return real.realloc(old, size);
	return old ? NULL : arena_alloc(size, ARENA_ALIGN); /* old is from the arena: realloc() moved it */
}

static int boot_posix_memalign(void **out, size_t align, size_t size)
{
	if (ready() && real.posix_memalign != boot_posix_memalign)
		return real.posix_memalign(out, align, size);
	*out = arena_alloc(size, align);
	return *out ? 0 : ENOMEM;
}

static void *boot_aligned_alloc(size_t align, size_t size)
{
	return ready() && real.aligned_alloc != boot_aligned_alloc ? real.aligned_alloc(align, size)
								  : arena_alloc(size, align);
}

static void *boot_memalign(size_t align, size_t size)
{
	return ready() && real.memalign != boot_memalign ? real.memalign(align, size) : arena_alloc(size, align);
}

static void *boot_valloc(size_t size)
{
	return ready() && real.valloc != boot_valloc ? real.valloc(size) : arena_alloc(size, 4096);
}

static void *boot_pvalloc(size_t size)
{
	return ready() && real.pvalloc != boot_pvalloc ? real.pvalloc(size) : arena_alloc(size, 4096);
}

static uint64_t seed_of(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)(uintptr_t)&ts ^ ((uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec) ^
	       ((uint64_t)getpid() << 32);
}

/* The thread's counter crossed a sampled byte (or it is the thread's first allocation, or sampling
 * is off): the allocation's weight when it is sampled (and in the set), else 0. Before the library
 * is ready (and after a failed allocation) the counter is set to 0: the next allocation comes back
 * (0, not what the failed size left: a counter far below 0 would wrap round). */
static __attribute__((noinline)) uint64_t sample_slow(void *p, size_t size)
{
	pid_t pid;
	uint64_t weight;

	if (!p || in_arena(p) || atomic_load_explicit(&state, memory_order_acquire) != READY) {
		ts.left = 0;
		return 0;
	}
	if (!mean) {
		ts.left = UINT64_MAX; /* off: back here after 16 EiB */
		return 0;
	}
	pid = getpid();
	if (!ts.seeded || ts.pid != pid) {
		bool first = !ts.seeded;

		alloc_rng_seed(&ts.rng, seed_of());
		ts.pid = pid;
		ts.seeded = true;
		if (first) { /* the first allocation starts the thread's process of sampled bytes */
			uint64_t at = alloc_poisson_next(&ts.rng, mean);

			if (at > size) {
				ts.left = at - 1 - size;
				return 0;
			}
		}
	}
	ts.left = alloc_poisson_next(&ts.rng, mean) - 1; /* the next is at least 1 */
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
 * The fast path of every allocation: its bytes counted down in the thread's counter; true when it
 * holds the thread's next sampled byte (the subtraction borrows; or the thread is new, or the library
 * not ready yet). An entry point is then this and a jump to the real function: four instructions
 * (the TLS offset's load, the subtraction in memory, the branch, the jump), no frame. A due allocation's sampled path always sets the counter again (sample_slow()).
 */
static inline __attribute__((always_inline)) bool due(size_t size)
{
#if defined(__x86_64__)
	/* The counter (the first member) is subtracted from in memory and the borrow is the branch: gcc
	 * compiles __builtin_sub_overflow on thread-local memory to a load, a subtraction and a store. */
	_Static_assert(offsetof(struct thread_state, left) == 0, "due() subtracts from the state's start");
	__asm__ goto("movq otelprofd_alloc_ts@gottpoff(%%rip), %%rax\n\t"
		     "subq %0, %%fs:(%%rax)\n\t"
		     "jb %l[borrow]"
		     :
		     : "r"(size)
		     : "rax", "cc", "memory"
		     : borrow);
	return false;
borrow:
	return true;
#else
	return UNLIKELY(__builtin_sub_overflow(ts.left, size, &ts.left));
#endif
}

/* The fast path of free() and realloc(): a block that needs a look, one the counting filter says
 * may be sampled, or is the arena's (pinned in the filter): a shift, a mask and a load. free() is
 * eight instructions with its jump. The jump is through real.free: a call into the C library from
 * here goes through a pointer anyway (its GOT entry), so calling glibc's __libc_free by name would
 * cost the same and tie the library to glibc's allocator. */
static inline __attribute__((always_inline)) bool special(const void *p)
{
	return UNLIKELY(sampled_set_maybe(&set, p));
}

/*
 * A due allocation, made: sampled unless it failed or the set is full. Inlined into each entry
 * point's sampled path with its probe site, so a sampled allocation's stack starts there (malloc's:
 * otelprofd_sampled_malloc) and goes on in the program.
 */
static inline __attribute__((always_inline)) void *sampled(void *p, size_t size)
{
	uint64_t weight;

	if ((weight = sample_slow(p, size)))
		USDT3(otel_memory, alloc, p, size, weight);
	return p;
}

/* Before the block goes back: a sampled pointer fires free while it is still ours, so another
 * thread cannot get the same address and fire its alloc first. */
static inline __attribute__((always_inline)) void forget(void *p)
{
	if (sampled_set_remove(&set, p)) {
		atomic_fetch_add_explicit(&otelprofd_alloc_stats.freed, 1, memory_order_relaxed);
		USDT1(otel_memory, free, p);
	}
}

/*
 * The entry points: the fast path, then a tail call (gcc emits no frame for them); the sampled path
 * in a function of its own (with its frame), reached only when due. Those are in the dynamic symbol
 * table (protected: called directly from here), so that a stripped library still names a sampled
 * allocation's leaf frame.
 */
#define NOINLINE __attribute__((noinline, visibility("protected")))
NOINLINE void *otelprofd_sampled_malloc(size_t size);
NOINLINE void otelprofd_sampled_free(void *p);
NOINLINE void *otelprofd_sampled_calloc(size_t n, size_t size);
NOINLINE void *otelprofd_sampled_realloc(void *old, size_t size, bool is_due);
NOINLINE int otelprofd_sampled_posix_memalign(void **out, size_t align, size_t size);
NOINLINE void *otelprofd_sampled_valloc(size_t size);
NOINLINE void *otelprofd_sampled_pvalloc(size_t size);
NOINLINE void *otelprofd_sampled_aligned_alloc(size_t align, size_t size);
NOINLINE void *otelprofd_sampled_memalign(size_t align, size_t size);

NOINLINE void *otelprofd_sampled_malloc(size_t size)
{
	return sampled(real.malloc(size), size);
}

EXPORT void *malloc(size_t size)
{
	if (due(size))
		return otelprofd_sampled_malloc(size);
	return real.malloc(size);
}

NOINLINE void otelprofd_sampled_free(void *p)
{
	if (in_arena(p))
		return; /* the arena's blocks are never given back */
	forget(p);
	real.free(p);
}

EXPORT void free(void *p)
{
	if (special(p))
		return otelprofd_sampled_free(p);
	real.free(p);
}

NOINLINE void *otelprofd_sampled_calloc(size_t n, size_t size)
{
	return sampled(real.calloc(n, size), n * size);
}

EXPORT void *calloc(size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	if (due(bytes))
		return otelprofd_sampled_calloc(n, size);
	return real.calloc(n, size);
}

/*
 * realloc() of a block of the arena, of a sampled block, or to a size that is due. A new size is a
 * new allocation. A sampled block is moved (a new block, its bytes copied, then its free fired and
 * the block given back), so that a failed realloc leaves it live and sampled, as the C library
 * leaves it allocated; realloc(p, 0) frees it. (Over an allocator without malloc_usable_size, its
 * free fires before the real realloc: a failed one loses it from the in-use profile.)
 */
NOINLINE void *otelprofd_sampled_realloc(void *old, size_t size, bool is_due)
{
	void *p;

	if (in_arena(old)) {
		size_t had = ((const size_t *)old)[-1];

		p = real.malloc(size);
		if (p)
			memcpy(p, old, had < size ? had : size);
	} else if (size && real.usable_size && sampled_set_contains(&set, old)) {
		size_t had = real.usable_size(old);

		p = real.malloc(size);
		if (!p) {
			if (is_due)
				ts.left = 0; /* the next allocation is due (see sample_slow()) */
			return NULL; /* old stays live, in the set */
		}
		memcpy(p, old, had < size ? had : size);
		forget(old);
		real.free(old);
	} else {
		forget(old); /* realloc(p, 0) frees p (and may return NULL) */
		p = real.realloc(old, size);
	}
	return is_due ? sampled(p, size) : p;
}

EXPORT void *realloc(void *old, size_t size)
{
	bool is_due = due(size);

	if (UNLIKELY(is_due) || special(old))
		return otelprofd_sampled_realloc(old, size, is_due);
	return real.realloc(old, size);
}

NOINLINE int otelprofd_sampled_posix_memalign(void **out, size_t align, size_t size)
{
	int r = real.posix_memalign(out, align, size);

	sampled(r ? NULL : *out, size);
	return r;
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	if (due(size))
		return otelprofd_sampled_posix_memalign(out, align, size);
	return real.posix_memalign(out, align, size);
}

/* The entry points of one size, and of an alignment and a size: the same countdown, their own
 * sampled path and probe site. */
#define SIZE_ENTRY(name)                                                                                 \
	NOINLINE void *otelprofd_sampled_##name(size_t size)                                             \
	{                                                                                                 \
		return sampled(real.name(size), size);                                                   \
	}                                                                                                 \
	EXPORT void *name(size_t size)                                                                   \
	{                                                                                                 \
		if (due(size))                                                                           \
			return otelprofd_sampled_##name(size);                                           \
		return real.name(size);                                                                  \
	}

#define ALIGNED_ENTRY(name)                                                                              \
	NOINLINE void *otelprofd_sampled_##name(size_t align, size_t size)                               \
	{                                                                                                 \
		return sampled(real.name(align, size), size);                                            \
	}                                                                                                 \
	EXPORT void *name(size_t align, size_t size)                                                     \
	{                                                                                                 \
		if (due(size))                                                                           \
			return otelprofd_sampled_##name(align, size);                                    \
		return real.name(align, size);                                                           \
	}

SIZE_ENTRY(valloc)
SIZE_ENTRY(pvalloc)
ALIGNED_ENTRY(aligned_alloc)
ALIGNED_ENTRY(memalign)
