/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --memory-limit: the daemon's resident memory (RSS) kept under a bound by the one part of it that
 * follows the host's programs, the symbol cache. Each check gives the cache what the rest leaves:
 *     bound = limit - the most RSS outside the cache (RSS - the cache's bytes) seen lately
 * "lately": this window of MEMORY_LIMIT_WINDOW_NS and the one before, so that what comes and goes
 * (an export's profile and requests, an interval's tables) is left room for between its peaks, and
 * what comes to stay (gRPC's libraries at the first request, tables that grew) lowers the bound for
 * good. The cache's bytes count whole the files it maps, of which only the pages touched are
 * resident: the rest is then underestimated, never over, and the cache is not shrunk past what
 * the limit needs. The symbolizer keeps the bound (symbolizer_set_byte_bound(): a floor of 16 MiB,
 * no more than --symbol-cache; evictions counted) and admits no module at full cost again soon
 * after it was evicted, so a bound that moves does not thrash. When the rest alone is over the
 * limit, nothing more can be given up: counted (checks_over), the cache at its floor.
 * The checks are a second apart, and an export's memory (the profile built, then its requests) can
 * come and go between two: its high points are noted as they happen (memory_limit_note_rss()).
 * Pure arithmetic on figures the caller reads (testable), but for reading and noting the RSS.
 */
#ifndef OTELPROFD_MEMORY_LIMIT_H
#define OTELPROFD_MEMORY_LIMIT_H

#include <stddef.h>
#include <stdint.h>

#define MEMORY_LIMIT_WINDOW_NS (30ULL * 1000000000ULL)
/* The second lever, once the symbol cache is at its floor and the limit still not kept: an export's
 * memory (the profile built from the interval, its requests) grows with the interval, so intervals
 * end at half the bytes (down to MEMORY_LIMIT_INTERVAL_MIN, 2 MiB: at 1 MiB, a build every half
 * second at 20,000 samples a second, more were dropped; at most once in
 * MEMORY_LIMIT_SHRINK_NS), and at twice again (up to --interval-memory; at most once in
 * MEMORY_LIMIT_GROW_NS) once the cache would have MEMORY_LIMIT_GROW_ROOM times the interval's
 * bytes over its floor. Nothing is dropped: more, smaller requests are sent. */
#define MEMORY_LIMIT_INTERVAL_MIN ((size_t)2 << 20)
#define MEMORY_LIMIT_SHRINK_NS (10ULL * 1000000000ULL)
#define MEMORY_LIMIT_GROW_NS (30ULL * 1000000000ULL)
#define MEMORY_LIMIT_GROW_ROOM 4
/* Counted in the rest before an export was seen (and for a window after the first, until its
 * peaks are the window's): what the first exports bring, gRPC's libraries loaded at the first
 * request (10 MiB here) and an export's profile and requests. Without it the cache filled to what
 * the start left and the first exports went over the limit before the checks saw them. */
#define MEMORY_LIMIT_FIRST_EXPORT ((uint64_t)16 << 20)

struct memory_limit {
	uint64_t limit;             /* bytes of RSS; 0: off (the cache keeps --symbol-cache) */
	uint64_t window_start_ns;   /* CLOCK_MONOTONIC start of the current window */
	uint64_t rest_now;          /* the most RSS outside the symbol cache seen in this window */
	uint64_t rest_before;       /* ... in the window before */
	uint64_t rss;               /* RSS at the last check */
	uint64_t bound;             /* the symbol cache's bound the last check gave (before the
				       symbolizer's floor and ceiling) */
	uint64_t checks;            /* checks made */
	uint64_t checks_over;       /* checks that found RSS over the limit */
	uint64_t lowered;           /* checks that lowered the bound */
	uint64_t cache_floor;       /* the least bound the symbol cache takes */
	size_t interval_max;        /* --interval-memory */
	size_t interval_budget;     /* the bytes an interval may hold now: interval_max, or less */
	uint64_t interval_changed_ns; /* when interval_budget last changed (0: never) */
	uint64_t intervals_shrunk;  /* times interval_budget was halved */
	uint64_t reserve;           /* counted in the rest until reserve_until_ns: set by the caller
				       (MEMORY_LIMIT_FIRST_EXPORT when exporting), 0 once past */
	uint64_t reserve_until_ns;  /* 0: until the first export is seen (memory_limit_export_seen()) */
};

/* Start at now; limit 0 turns it off. cache_floor: the symbol cache's least bound;
 * interval_memory: --interval-memory. */
void memory_limit_init(struct memory_limit *l, uint64_t limit, uint64_t cache_floor, size_t interval_memory,
		       uint64_t now);
/* A check at now with the process's RSS and the bytes the symbol cache holds (its own account):
 * the symbol cache's bound from now on (0 when the rest alone takes the limit; then
 * interval_budget may be halved). Off: UINT64_MAX. */
uint64_t memory_limit_update(struct memory_limit *l, uint64_t now, uint64_t rss, uint64_t cache_bytes);
/* An export's high point was noted at now: the reserve goes a window later (the first only). */
void memory_limit_export_seen(struct memory_limit *l, uint64_t now);
/* The process's resident bytes now (/proc/self/statm). 0, or -errno. */
int memory_limit_read_rss(uint64_t *bytes);
/* Any thread, at a high point of memory that comes and goes between checks (an export's profile
 * built, then encoded into requests): the RSS now is kept for the next check, the most of them. */
void memory_limit_note_rss(void);
/* The most RSS noted since the last call (which forgets it); 0: none. */
uint64_t memory_limit_take_noted(void);

#endif
