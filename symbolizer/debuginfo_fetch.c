// SPDX-License-Identifier: Apache-2.0
#include "debuginfo_fetch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "debuginfod_lib.h"

/* Most files looked at when the cache is scanned for its size. */
#define MAX_SCAN_FILES 65536
/* Build ids that completed and wait for debuginfo_fetch_completed(). */
#define MAX_COMPLETED 64
#define MAX_ID 64

enum known_state { KNOWN_FREE, KNOWN_PENDING, KNOWN_MISSING };
enum { ABORT_NONE, ABORT_TIME, ABORT_SIZE, ABORT_STOP };

struct build_id {
	unsigned char bits[MAX_ID];
	size_t len;
};

struct known {
	struct build_id id;
	enum known_state state;
	uint64_t until_ns; /* KNOWN_MISSING: forgotten after this */
};

struct debuginfo_fetch {
	struct debuginfo_fetch_config config;
	char cache_dir[PATH_MAX];
	pthread_t worker;
	bool started;               /* worker created (on the first queued build id) */
	pthread_mutex_t lock;       /* everything below */
	pthread_cond_t wake;
	bool stop;
	struct build_id queue[DEBUGINFO_FETCH_QUEUE];
	size_t qhead, qlen;
	struct build_id completed[MAX_COMPLETED];
	size_t chead, clen;
	struct known known[DEBUGINFO_FETCH_KNOWN];
	struct debuginfo_fetch_stats stats;
	uint64_t deadline_ns;       /* of the download in progress (read by the progress callback) */
	int aborted;                /* why the callback cut it: ABORT_* (worker thread only) */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void hex(const struct build_id *id, char *out)
{
	for (size_t i = 0; i < id->len; i++)
		snprintf(out + 2 * i, 3, "%02x", id->bits[i]);
	out[2 * id->len] = 0;
}

/* libdebuginfod's own choice of cache directory (debuginfod-client.c, 0.188). */
static bool cache_dir_of(char *out, size_t size)
{
	const char *env = getenv("DEBUGINFOD_CACHE_PATH"), *xdg, *home;
	int n;

	if (env && *env)
		n = snprintf(out, size, "%s", env);
	else if ((xdg = getenv("XDG_CACHE_HOME")) && *xdg)
		n = snprintf(out, size, "%s/debuginfod_client", xdg);
	else if ((home = getenv("HOME")) && *home)
		n = snprintf(out, size, "%s/.cache/debuginfod_client", home);
	else
		return false;
	return n > 0 && (size_t)n < size;
}

/* The remembered entry of id, or NULL; forgets missing ids whose time is up. Lock held. */
static struct known *known_find(struct debuginfo_fetch *f, const unsigned char *id, size_t len)
{
	uint64_t now = now_ns();

	for (size_t i = 0; i < DEBUGINFO_FETCH_KNOWN; i++) {
		struct known *k = &f->known[i];

		if (k->state == KNOWN_MISSING && now >= k->until_ns)
			k->state = KNOWN_FREE;
		if (k->state != KNOWN_FREE && k->id.len == len && !memcmp(k->id.bits, id, len))
			return k;
	}
	return NULL;
}

/* Remember id in a free entry, else over the missing entry that expires first. Lock held. */
static struct known *known_add(struct debuginfo_fetch *f, const struct build_id *id)
{
	struct known *best = NULL;

	for (size_t i = 0; i < DEBUGINFO_FETCH_KNOWN; i++) {
		struct known *k = &f->known[i];

		if (k->state == KNOWN_FREE)
			return memset(k, 0, sizeof(*k));
		if (k->state == KNOWN_MISSING && (!best || k->until_ns < best->until_ns))
			best = k;
	}
	return best;
}

static void remember_missing(struct debuginfo_fetch *f, const struct build_id *id)
{
	struct known *k = known_find(f, id->bits, id->len);

	if (!k)
		k = known_add(f, id);
	if (!k)
		return;
	k->id = *id;
	k->state = KNOWN_MISSING;
	k->until_ns = now_ns() + f->config.negative_ttl_ms * 1000000ULL;
}

/* ---- cache bound ---- */

/* Date a cache file by its local use, from the fine clock: the kernel's own "now" for file times is
 * a coarse clock that can give two uses 100 ms apart the same time (and their order away). */
static void touch_now(int fd)
{
	struct timespec now[2];

	clock_gettime(CLOCK_REALTIME, &now[0]);
	now[1] = now[0];
	futimens(fd, now);
}

struct cached_file {
	char path[PATH_MAX];
	uint64_t mtime_ns;  /* last local use (nanoseconds: two downloads often share a second) */
	uint64_t bytes;
};

static int by_mtime(const void *a, const void *b)
{
	const struct cached_file *x = a, *y = b;

	return (x->mtime_ns > y->mtime_ns) - (x->mtime_ns < y->mtime_ns);
}

/* Files of the cache's build-id directories (libdebuginfod's own settings files are left). */
static size_t scan_cache(const char *dir, struct cached_file *files, size_t max, uint64_t *total)
{
	DIR *top = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	*total = 0;
	if (!top)
		return 0;
	while ((e = readdir(top)) && n < max) {
		char sub[PATH_MAX];
		struct dirent *fe;
		DIR *d;

		if (e->d_name[0] == '.' || snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) >= (int)sizeof(sub))
			continue;
		d = opendir(sub);
		if (!d)
			continue;
		while ((fe = readdir(d)) && n < max) {
			struct cached_file *cf = &files[n];
			struct stat st;

			if (fe->d_name[0] == '.' ||
			    snprintf(cf->path, sizeof(cf->path), "%s/%s", sub, fe->d_name) >= (int)sizeof(cf->path) ||
			    lstat(cf->path, &st) || !S_ISREG(st.st_mode))
				continue;
			cf->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL + (uint64_t)st.st_mtim.tv_nsec;
			cf->bytes = (uint64_t)st.st_blocks * 512 > (uint64_t)st.st_size ? (uint64_t)st.st_blocks * 512
											 : (uint64_t)st.st_size;
			*total += cf->bytes;
			n++;
		}
		closedir(d);
	}
	closedir(top);
	return n;
}

/* Remove the files used least recently (downloaded or opened: see touch_now()) until the
 * cache fits its bound; refresh the counters. */
static void enforce_cache_bound(struct debuginfo_fetch *f)
{
	struct cached_file *files = malloc(MAX_SCAN_FILES * sizeof(*files));
	uint64_t total, evicted = 0;
	size_t n, i;

	if (!files)
		return;
	n = scan_cache(f->cache_dir, files, MAX_SCAN_FILES, &total);
	qsort(files, n, sizeof(*files), by_mtime);
	for (i = 0; i < n && total > f->config.max_cache_bytes; i++) {
		char *slash;

		if (unlink(files[i].path))
			continue;
		total -= files[i].bytes;
		evicted++;
		slash = strrchr(files[i].path, '/');
		*slash = 0;
		rmdir(files[i].path); /* only succeeds when that build id has no other file */
	}
	pthread_mutex_lock(&f->lock);
	f->stats.cache_evicted += evicted;
	f->stats.cache_bytes = total;
	f->stats.cache_files = n - evicted;
	pthread_mutex_unlock(&f->lock);
	free(files);
}

/* ---- worker ---- */

/* Called by libdebuginfod about once a second and as data arrives: nonzero aborts. */
static int progress(debuginfod_client *client, long done, long total)
{
	struct debuginfo_fetch *f = debuginfod_lib.debuginfod_get_user_data(client);
	bool stop;

	pthread_mutex_lock(&f->lock);
	stop = f->stop;
	pthread_mutex_unlock(&f->lock);
	if (stop)
		f->aborted = ABORT_STOP;
	else if (now_ns() > f->deadline_ns)
		f->aborted = ABORT_TIME;
	else if ((done > 0 && (uint64_t)done > f->config.max_cache_bytes) ||
		 (total > 0 && (uint64_t)total > f->config.max_cache_bytes))
		f->aborted = ABORT_SIZE;
	return f->aborted != ABORT_NONE;
}

static void fetch_one(struct debuginfo_fetch *f, debuginfod_client *client, const struct build_id *id)
{
	char *path = NULL;
	int fd;

	f->deadline_ns = now_ns() + f->config.timeout_ms * 1000000ULL;
	f->aborted = ABORT_NONE;
	/* libdebuginfod reports a download its callback cut as -ENOENT: f->aborted tells. */
	fd = debuginfod_lib.debuginfod_find_debuginfo(client, id->bits, (int)id->len, &path);
	if (fd >= 0) {
		/* libdebuginfod dates the file by the server's Last-Modified: a fresh download of an old
		 * package would look oldest and be evicted first. The cache is ordered by local use. */
		touch_now(fd);
		close(fd);
	}
	pthread_mutex_lock(&f->lock);
	f->stats.requests++;
	if (fd >= 0) {
		struct known *k = known_find(f, id->bits, id->len);

		f->stats.found++;
		if (k)
			k->state = KNOWN_FREE;
		if (f->clen < MAX_COMPLETED)
			f->completed[(f->chead + f->clen++) % MAX_COMPLETED] = *id;
	} else {
		if (f->aborted == ABORT_TIME)
			f->stats.timeouts++;
		else if (f->aborted == ABORT_SIZE)
			f->stats.too_big++;
		else if (f->aborted == ABORT_NONE && fd == -ENOENT)
			f->stats.not_found++;
		else
			f->stats.failed++;
		remember_missing(f, id);
	}
	pthread_mutex_unlock(&f->lock);
	free(path);
	if (fd >= 0)
		enforce_cache_bound(f);
}

static void *worker(void *arg)
{
	struct debuginfo_fetch *f = arg;
	debuginfod_client *client = debuginfod_lib.debuginfod_begin();

	if (client) {
		debuginfod_lib.debuginfod_set_user_data(client, f);
		debuginfod_lib.debuginfod_set_progressfn(client, progress);
	}
	enforce_cache_bound(f);
	pthread_mutex_lock(&f->lock);
	for (;;) {
		struct build_id id;

		while (!f->stop && !f->qlen)
			pthread_cond_wait(&f->wake, &f->lock);
		if (f->stop)
			break;
		id = f->queue[f->qhead];
		f->qhead = (f->qhead + 1) % DEBUGINFO_FETCH_QUEUE;
		f->qlen--;
		pthread_mutex_unlock(&f->lock);
		if (client) {
			fetch_one(f, client, &id);
		} else {
			pthread_mutex_lock(&f->lock);
			f->stats.failed++;
			remember_missing(f, &id);
			pthread_mutex_unlock(&f->lock);
		}
		pthread_mutex_lock(&f->lock);
	}
	pthread_mutex_unlock(&f->lock);
	if (client)
		debuginfod_lib.debuginfod_end(client);
	return NULL;
}

/* ---- API ---- */

struct debuginfo_fetch *debuginfo_fetch_new(const struct debuginfo_fetch_config *config)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	struct debuginfo_fetch *f;

	if (!urls || !*urls) {
		errno = ENOENT;
		return NULL;
	}
	/* Loaded only now that debuginfod is configured: debuginfod_lib_error() says why it failed. */
	if (debuginfod_lib_load()) {
		errno = ELIBACC;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	if (config)
		f->config = *config;
	if (!f->config.max_cache_bytes)
		f->config.max_cache_bytes = 1ULL << 30;
	if (!f->config.timeout_ms)
		f->config.timeout_ms = 30000;
	if (!f->config.negative_ttl_ms)
		f->config.negative_ttl_ms = 600000;
	if (!cache_dir_of(f->cache_dir, sizeof(f->cache_dir))) {
		free(f);
		errno = ENOENT;
		return NULL;
	}
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->wake, NULL);
	return f;
}

void debuginfo_fetch_free(struct debuginfo_fetch *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->lock);
	if (f->started)
		pthread_join(f->worker, NULL);
	pthread_cond_destroy(&f->wake);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/* Path of id's debug file in the cache (libdebuginfod's layout: DIR/<hex>/debuginfo). */
static bool cached_path(const struct debuginfo_fetch *f, const struct build_id *id, char *out, size_t size)
{
	char h[2 * MAX_ID + 1];
	int n;

	hex(id, h);
	n = snprintf(out, size, "%s/%s/debuginfo", f->cache_dir, h);
	return n > 0 && (size_t)n < size;
}

int debuginfo_fetch_lookup(struct debuginfo_fetch *f, const unsigned char *bits, size_t len)
{
	struct build_id id = { .len = len };
	char path[PATH_MAX];
	struct known *k;
	struct stat st;
	int fd, r;

	if (!len || len > MAX_ID)
		return -EINVAL;
	memcpy(id.bits, bits, len);
	pthread_mutex_lock(&f->lock);
	k = known_find(f, bits, len);
	if (k) {
		r = k->state == KNOWN_PENDING ? -EAGAIN : -ENOENT;
		if (r == -ENOENT)
			f->stats.negative_hits++;
		pthread_mutex_unlock(&f->lock);
		return r;
	}
	pthread_mutex_unlock(&f->lock);

	/* In the cache already: open it here (libdebuginfod leaves empty files for its own
	 * negative cache; those are not ours to open). */
	if (cached_path(f, &id, path, sizeof(path))) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
			touch_now(fd); /* used now: evicted last */
			return fd;
		}
		if (fd >= 0)
			close(fd);
	}

	/* The worker starts with the first download, so it runs with the privileges of the thread
	 * doing lookups (after the daemon dropped its setup capabilities), not those at creation. */
	if (!f->started) {
		if (pthread_create(&f->worker, NULL, worker, f))
			return -EAGAIN; /* tried again on a later open */
		f->started = true;
	}
	pthread_mutex_lock(&f->lock);
	if (f->qlen == DEBUGINFO_FETCH_QUEUE || !(k = known_add(f, &id))) {
		f->stats.queue_full++;
		r = -ENOSPC;
	} else {
		k->id = id;
		k->state = KNOWN_PENDING;
		f->queue[(f->qhead + f->qlen++) % DEBUGINFO_FETCH_QUEUE] = id;
		pthread_cond_signal(&f->wake);
		r = -EAGAIN;
	}
	pthread_mutex_unlock(&f->lock);
	return r;
}

void debuginfo_fetch_reject(struct debuginfo_fetch *f, const unsigned char *bits, size_t len)
{
	struct build_id id = { .len = len };
	char path[PATH_MAX];

	if (!len || len > MAX_ID)
		return;
	memcpy(id.bits, bits, len);
	if (cached_path(f, &id, path, sizeof(path)))
		unlink(path);
	pthread_mutex_lock(&f->lock);
	f->stats.rejected++;
	remember_missing(f, &id);
	pthread_mutex_unlock(&f->lock);
}

size_t debuginfo_fetch_completed(struct debuginfo_fetch *f, unsigned char *id)
{
	size_t len = 0;

	pthread_mutex_lock(&f->lock);
	if (f->clen) {
		len = f->completed[f->chead].len;
		memcpy(id, f->completed[f->chead].bits, len);
		f->chead = (f->chead + 1) % MAX_COMPLETED;
		f->clen--;
	}
	pthread_mutex_unlock(&f->lock);
	return len;
}

void debuginfo_fetch_stats(struct debuginfo_fetch *f, struct debuginfo_fetch_stats *out)
{
	pthread_mutex_lock(&f->lock);
	*out = f->stats;
	pthread_mutex_unlock(&f->lock);
}
