/* SPDX-License-Identifier: Apache-2.0 */
#include "ops/memory_limit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void memory_limit_init(struct memory_limit *l, uint64_t limit, uint64_t cache_floor, size_t interval_memory,
		       uint64_t now)
{
	*l = (struct memory_limit){
		.limit = limit, .window_start_ns = now, .bound = limit ? limit : UINT64_MAX, .cache_floor = cache_floor,
		.interval_max = interval_memory, .interval_budget = interval_memory,
	};
}

/* The second lever (see MEMORY_LIMIT_INTERVAL_MIN): intervals end smaller while the cache cannot
 * give what the limit needs, and larger again once it has room. */
static void step_interval(struct memory_limit *l, uint64_t now, uint64_t bound)
{
	if (bound < l->cache_floor && l->interval_budget > MEMORY_LIMIT_INTERVAL_MIN &&
	    (!l->interval_changed_ns || now - l->interval_changed_ns >= MEMORY_LIMIT_SHRINK_NS)) {
		l->interval_budget = l->interval_budget / 2 > MEMORY_LIMIT_INTERVAL_MIN ? l->interval_budget / 2
											 : MEMORY_LIMIT_INTERVAL_MIN;
		l->interval_changed_ns = now;
		l->intervals_shrunk++;
	} else if (l->interval_budget < l->interval_max &&
		   bound >= l->cache_floor + MEMORY_LIMIT_GROW_ROOM * (uint64_t)l->interval_budget &&
		   now - l->interval_changed_ns >= MEMORY_LIMIT_GROW_NS) {
		l->interval_budget = l->interval_budget * 2 < l->interval_max ? l->interval_budget * 2 : l->interval_max;
		l->interval_changed_ns = now;
	}
}

uint64_t memory_limit_update(struct memory_limit *l, uint64_t now, uint64_t rss, uint64_t cache_bytes)
{
	uint64_t rest = rss > cache_bytes ? rss - cache_bytes : 0, peak, bound;

	if (!l->limit)
		return UINT64_MAX;
	if (l->reserve && l->reserve_until_ns && now >= l->reserve_until_ns)
		l->reserve = 0;
	rest += l->reserve;
	if (now - l->window_start_ns >= MEMORY_LIMIT_WINDOW_NS) {
		/* A window with no check between (a stalled loop) leaves nothing to remember. */
		l->rest_before = now - l->window_start_ns >= 2 * MEMORY_LIMIT_WINDOW_NS ? 0 : l->rest_now;
		l->rest_now = 0;
		l->window_start_ns = now;
	}
	if (rest > l->rest_now)
		l->rest_now = rest;
	peak = l->rest_now > l->rest_before ? l->rest_now : l->rest_before;
	bound = peak < l->limit ? l->limit - peak : 0;
	l->checks++;
	if (rss > l->limit)
		l->checks_over++;
	if (bound < l->bound && bound < cache_bytes)
		l->lowered++;
	l->rss = rss;
	l->bound = bound;
	step_interval(l, now, bound);
	return bound;
}

int memory_limit_read_rss(uint64_t *bytes)
{
	char buf[128];
	unsigned long long size, pages;
	ssize_t n;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &size, &pages) != 2)
		return -EIO;
	*bytes = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
	return 0;
}

/* The most RSS noted since the last check (0: none). */
static _Atomic uint64_t noted_rss;

void memory_limit_note_rss(void)
{
	uint64_t rss, seen;

	if (memory_limit_read_rss(&rss))
		return;
	seen = atomic_load(&noted_rss);
	while (rss > seen && !atomic_compare_exchange_weak(&noted_rss, &seen, rss))
		;
}

uint64_t memory_limit_take_noted(void)
{
	return atomic_exchange(&noted_rss, 0);
}

void memory_limit_export_seen(struct memory_limit *l, uint64_t now)
{
	if (l->reserve && !l->reserve_until_ns)
		l->reserve_until_ns = now + MEMORY_LIMIT_WINDOW_NS;
}
