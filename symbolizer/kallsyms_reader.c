// SPDX-License-Identifier: Apache-2.0
#include "kallsyms_reader.h"
#include "kallsyms_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t kallsyms_hash_file(const char *path)
{
	uint64_t h = 1469598103934665603ULL;
	char buf[4096];
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		for (size_t i = 0; i < n; i++)
			h = (h ^ (unsigned char)buf[i]) * 1099511628211ULL;
	fclose(f);
	return h;
}

/* The table saved by an earlier run of this boot, or NULL; key is filled for a save after a full
 * read (key->head_len 0: no cache). */
static struct kallsyms *cached(struct kallsyms_read *job, struct kallsyms_cache_key *key)
{
	struct kallsyms *k;

	key->head_len = 0;
	if (!job->cache_path || kallsyms_cache_key_read(key, job->kallsyms_path, job->modules_hash, NULL, NULL)) {
		key->head_len = 0;
		return NULL;
	}
	if (job->cache_known && job->cached_modules_hash != job->modules_hash)
		return NULL; /* modules changed since this run read or wrote it */
	k = kallsyms_cache_read(job->cache_path, key);
	if (k) {
		job->counts.cache_hits++;
		job->cache_known = true;
		job->cached_modules_hash = job->modules_hash;
	} else if (errno == EPERM || errno == EBADMSG) {
		job->counts.cache_refused++;
	} else if (errno != ENOMEM) {
		job->counts.cache_stale++;
	}
	return k;
}

/* Save a full read for the next run of this boot, unless the file holds it already. */
static void save(struct kallsyms_read *job, const struct kallsyms *k, const struct kallsyms_cache_key *key)
{
	if (!key->head_len || !k || kallsyms_hidden(k) || !kallsyms_count(k) ||
	    (job->cache_known && job->cached_modules_hash == job->modules_hash) ||
	    kallsyms_hash_file("/proc/modules") != job->modules_hash) /* changed during the read: not this key's */
		return;
	if (kallsyms_cache_write(job->cache_path, k, key)) {
		job->counts.cache_write_failed++;
		return;
	}
	job->counts.cache_writes++;
	job->cache_known = true;
	job->cached_modules_hash = job->modules_hash;
}

/* A full read kept as the cache's table, read from its file at each lookup, and the few symbols the
 * cache leaves out, when the cache holds this key's table: the same lookups with 5 MiB less on the
 * heap. Else full itself. */
static struct kallsyms *joined_with_cache(struct kallsyms_read *job, struct kallsyms *full,
					  const struct kallsyms_cache_key *key)
{
	struct kallsyms *c;

	if (!full || !key->head_len || !job->cache_known || job->cached_modules_hash != job->modules_hash)
		return full;
	c = kallsyms_cache_read(job->cache_path, key);
	if (!c || kallsyms_cache_join(c, full)) {
		kallsyms_free(c);
		return full;
	}
	job->counts.joined++;
	kallsyms_free(full);
	return c;
}

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void kallsyms_read_run(struct kallsyms_read *job)
{
	struct kallsyms_cache_key key = { 0 };
	struct kallsyms *k = NULL;
	uint64_t wall = now_ns(CLOCK_MONOTONIC), cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);

	job->modules_hash = kallsyms_hash_file("/proc/modules");
	if (!job->full)
		k = cached(job, &key);
	else if (job->cache_path &&
		 kallsyms_cache_key_read(&key, job->kallsyms_path, job->modules_hash, NULL, NULL))
		key.head_len = 0;
	if (!k) {
		job->counts.full_reads++;
		k = kallsyms_load(job->kallsyms_path);
		if (k && !strcmp(job->kallsyms_path, "/proc/kallsyms")) {
			FILE *modules = fopen("/proc/modules", "re"); /* bounds each module's last symbol */

			if (modules) {
				kallsyms_set_module_ranges(k, modules);
				fclose(modules);
			}
		}
		save(job, k, &key);
		k = joined_with_cache(job, k, &key);
	}
	job->table = k;
	job->wall_ns = now_ns(CLOCK_MONOTONIC) - wall;
	job->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
}

struct kallsyms_reader {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t done_cond; /* on CLOCK_MONOTONIC */
	bool done;                /* the job ran (guarded by lock) */
	struct kallsyms_read job;
};

static void *reader_main(void *arg)
{
	struct kallsyms_reader *r = arg;

	kallsyms_read_run(&r->job);
	pthread_mutex_lock(&r->lock);
	r->done = true;
	pthread_cond_broadcast(&r->done_cond);
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

struct kallsyms_reader *kallsyms_reader_start(const struct kallsyms_read *job)
{
	struct kallsyms_reader *r = calloc(1, sizeof(*r));
	pthread_condattr_t attr;
	int err;

	if (!r)
		return NULL;
	r->job = *job;
	pthread_mutex_init(&r->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&r->done_cond, &attr);
	pthread_condattr_destroy(&attr);
	err = pthread_create(&r->thread, NULL, reader_main, r);
	if (err) {
		pthread_cond_destroy(&r->done_cond);
		pthread_mutex_destroy(&r->lock);
		free(r);
		errno = err;
		return NULL;
	}
	pthread_setname_np(r->thread, "kallsyms");
	return r;
}

bool kallsyms_reader_wait(struct kallsyms_reader *r, uint64_t deadline_ns)
{
	struct timespec until = { .tv_sec = (time_t)(deadline_ns / 1000000000ULL),
				  .tv_nsec = (long)(deadline_ns % 1000000000ULL) };
	bool done;

	pthread_mutex_lock(&r->lock);
	while (!r->done) {
		if (!deadline_ns)
			pthread_cond_wait(&r->done_cond, &r->lock);
		else if (pthread_cond_timedwait(&r->done_cond, &r->lock, &until) == ETIMEDOUT)
			break;
	}
	done = r->done;
	pthread_mutex_unlock(&r->lock);
	return done;
}

struct kallsyms_read kallsyms_reader_take(struct kallsyms_reader *r)
{
	struct kallsyms_read job;

	pthread_join(r->thread, NULL);
	job = r->job;
	pthread_cond_destroy(&r->done_cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return job;
}

void kallsyms_reader_free(struct kallsyms_reader *r)
{
	if (r)
		kallsyms_free(kallsyms_reader_take(r).table);
}
