/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Separate debug files from debuginfod servers (DEBUGINFOD_URLS), fetched by libdebuginfod on a
 * thread of their own so the caller (the sampling thread) never waits for the network: a lookup
 * either opens a file already in the local cache or queues the build id and returns at once.
 * When a download completes, debuginfo_fetch_completed() hands its build id back so the caller
 * can reopen the module with DWARF.
 *
 * The cache is libdebuginfod's directory ($DEBUGINFOD_CACHE_PATH, else
 * $XDG_CACHE_HOME/debuginfod_client, else $HOME/.cache/debuginfod_client), bounded here in bytes:
 * after each download the oldest files (by modification time) are removed until it fits.
 * Build ids that were not found, failed or timed out are not asked for again for a while.
 * Every bound has a counter in struct debuginfo_fetch_stats.
 *
 * Thread safety: one caller thread plus the internal worker, created by the first lookup that
 * queues a download (so it has that thread's capabilities, not those the process had when the
 * fetcher was made); debuginfo_fetch_free() stops it (a download in progress is aborted within
 * about a second).
 */
#ifndef OTELPROF_DEBUGINFO_FETCH_H
#define OTELPROF_DEBUGINFO_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Build ids waiting for the worker; more are dropped (and asked for again on a later open). */
#define DEBUGINFO_FETCH_QUEUE 64
/* Build ids remembered as pending, missing or just fetched. */
#define DEBUGINFO_FETCH_KNOWN 4096

struct debuginfo_fetch_config {
	uint64_t max_cache_bytes; /* bound of the cache directory; 0: 1 GiB */
	uint64_t timeout_ms;      /* whole download, connection included; 0: 30 s */
	uint64_t negative_ttl_ms; /* not found / failed build ids are not asked again for this long;
				     0: 10 minutes */
};

struct debuginfo_fetch_stats {
	uint64_t requests;     /* downloads attempted by the worker */
	uint64_t found;        /* files downloaded (or found in the cache by libdebuginfod) */
	uint64_t not_found;    /* the servers do not have the build id */
	uint64_t failed;       /* servers down, refused, or answering garbage */
	uint64_t timeouts;     /* downloads cut at timeout_ms */
	uint64_t too_big;      /* downloads cut because the file exceeds the whole cache bound */
	uint64_t negative_hits;/* lookups answered from the remembered failures */
	uint64_t queue_full;   /* build ids not queued because the queue was full */
	uint64_t rejected;     /* cached files that were not a debug file of their build id */
	uint64_t cache_evicted;/* files removed from the cache to respect its byte bound */
	uint64_t cache_bytes;  /* bytes in the cache after the last scan */
	uint64_t cache_files;  /* files in the cache after the last scan */
};

struct debuginfo_fetch;

/* NULL with errno: ENOENT when DEBUGINFOD_URLS is unset or empty, or another errno. */
struct debuginfo_fetch *debuginfo_fetch_new(const struct debuginfo_fetch_config *config);
void debuginfo_fetch_free(struct debuginfo_fetch *f);

/*
 * The cached debug file of a build id, opened read-only (caller closes it); -EAGAIN when it was
 * queued (or is being fetched), -ENOENT when it is remembered as missing, -ENOSPC when the queue
 * is full. Never blocks on the network.
 */
int debuginfo_fetch_lookup(struct debuginfo_fetch *f, const unsigned char *id, size_t len);
/* The cached file of this build id was not its debug file: remove it and remember the id as missing. */
void debuginfo_fetch_reject(struct debuginfo_fetch *f, const unsigned char *id, size_t len);
/* Copy one build id whose file arrived since the last call into id (64 bytes); its length, or 0. */
size_t debuginfo_fetch_completed(struct debuginfo_fetch *f, unsigned char *id);
/* A snapshot of the counters. */
void debuginfo_fetch_stats(struct debuginfo_fetch *f, struct debuginfo_fetch_stats *out);

#endif
