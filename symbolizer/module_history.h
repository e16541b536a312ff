/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the module cache remembers of every module it opened, past the module's own life in the
 * cache: what its open cost (bytes, time) and how it was served (its tier), by build id (or, for a
 * file without one, by device and inode). The admission decision reads it, so that a module that
 * does not fit, or that left the cache under pressure, is never opened again at full cost soon
 * after: it is served by the cheaper tier instead (ELF symbols and .eh_frame unwinding, nothing
 * inflated). Pure bookkeeping: no I/O, no clock (callers pass the time), never prints.
 *
 * Bounded: MODULE_HISTORY_SLOTS entries in sets of MODULE_HISTORY_WAYS; a new key replaces its
 * set's least recently touched entry (counted in dropped). The table is a plain struct the caller
 * owns (embedded or allocated); module_history_get() hands out pointers into it that stay valid
 * until the next module_history_get() with create set.
 */
#ifndef OTELPROF_MODULE_HISTORY_H
#define OTELPROF_MODULE_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MODULE_HISTORY_SLOTS 1024
#define MODULE_HISTORY_WAYS 4
/* A module that left the cache under pressure is served by the cheaper tier if wanted again
 * within this long (the working set is larger than the cache: opening it again would thrash). */
#define MODULE_HISTORY_COOLDOWN_NS (600ULL * 1000000000ULL)
/* A full open that took longer than this is not repeated: the next open is at the cheaper tier. */
#define MODULE_HISTORY_SLOW_OPEN_NS (100ULL * 1000000ULL)
/* A full open faster than this (and small, see module_history_evicted()) may be repeated after an
 * eviction: opening it again costs less than a turn's budget. */
#define MODULE_HISTORY_CHEAP_OPEN_NS (20ULL * 1000000ULL)
/* A module is admitted at the full tier only when it fits in 1/MODULE_SHARE_DIVISOR of the cache:
 * one module never needs the whole cache, so it never has to evict all the others to be served. */
#define MODULE_SHARE_DIVISOR 2

enum module_tier {
	MODULE_TIER_FULL,    /* ELF symbols, DWARF lines and inline frames, .eh_frame and .debug_frame */
	MODULE_TIER_SYMBOLS, /* ELF symbols of the file itself and .eh_frame: nothing inflated */
};

enum module_tier_reason {
	MODULE_REASON_NONE,    /* full tier */
	MODULE_REASON_TOO_BIG, /* its debug info would take more than its share of the cache */
	MODULE_REASON_THRASH,  /* it left the cache under pressure and was wanted again soon after */
	MODULE_REASON_SLOW,    /* its last full open took longer than MODULE_HISTORY_SLOW_OPEN_NS */
};

/* Who a module is: its GNU build id, or (none) the identity of its file. */
struct module_key {
	unsigned char build_id[64];
	size_t build_id_len; /* 0: keyed by dev and inode */
	uint64_t dev, inode;
};

struct module_history_entry {
	struct module_key key;
	bool used;                   /* slot holds a key */
	uint64_t touched_ns;         /* last get, for replacement */
	enum module_tier tier;       /* the tier of its last open */
	enum module_tier_reason reason; /* why that tier */
	uint64_t opens;              /* opens of this module (any tier) */
	uint64_t bytes;              /* bytes its last open accounted for (measured after the open) */
	uint64_t peak_bytes;         /* most bytes it grew to while cached (measured after each use) */
	uint64_t open_ns;            /* time its last open took */
	uint64_t evictions;          /* times it left the cache under pressure at the full tier */
	enum module_tier_reason demoted; /* why its next opens are at the symbols tier; NONE: they are not */
	uint64_t demoted_ns;         /* since when (THRASH and SLOW hold for MODULE_HISTORY_COOLDOWN_NS,
					TOO_BIG for as long as the entry is remembered) */
	uint64_t symbols_evicted_ns; /* when it last left the cache under pressure at the symbols tier */
	bool noticed;                /* its cheaper tier has been reported (once per module) */
};

struct module_history {
	struct module_history_entry entries[MODULE_HISTORY_SLOTS];
	uint64_t dropped;            /* entries replaced by a newer key (their history forgotten) */
};

/* The entry of key; with create, a new entry (replacing the set's least recently touched one)
 * when there is none; NULL otherwise. now: CLOCK_MONOTONIC ns. */
struct module_history_entry *module_history_get(struct module_history *h, const struct module_key *key,
						uint64_t now, bool create);
/* The tier a module should be opened at now, and why (e may be NULL: never seen, full tier). */
enum module_tier module_history_decide(const struct module_history_entry *e, uint64_t now,
				       enum module_tier_reason *reason);
/* The module may be opened only where it fits without evicting another: it left the cache under
 * pressure at the symbols tier too, less than MODULE_HISTORY_COOLDOWN_NS ago. So a module is opened
 * at most twice per cooldown at the expense of others (once in full, once at the symbols tier):
 * a working set over the cache cannot make the cache open the same files again and again. */
bool module_history_must_fit(const struct module_history_entry *e, uint64_t now);
/* An open finished: its tier (and why), what it cost. A full open whose DWARF or debug file was
 * refused for its size (elf_module's inflate_refused) is recorded by the caller as the symbols tier
 * with MODULE_REASON_TOO_BIG. */
void module_history_opened(struct module_history_entry *e, enum module_tier tier, enum module_tier_reason reason,
			   uint64_t bytes, uint64_t open_ns, uint64_t now);
/* The module grew to bytes while cached; over cap (its share of the cache) at the full tier, it is
 * remembered as too big: its next open is at the symbols tier. */
void module_history_measured(struct module_history_entry *e, uint64_t bytes, uint64_t cap);
/* The module left the cache to make room (not for being idle). Unless its full open was cheap
 * (under cheap_bytes at its peak and under MODULE_HISTORY_CHEAP_OPEN_NS), its next opens for
 * MODULE_HISTORY_COOLDOWN_NS are at the symbols tier; evicted at the symbols tier, it must then fit
 * (module_history_must_fit()). */
void module_history_evicted(struct module_history_entry *e, uint64_t now, uint64_t cheap_bytes);
/* The reason's words for a log line ("its debug info is over its share of --symbol-cache"...). */
const char *module_history_reason_name(enum module_tier_reason reason);

#endif
