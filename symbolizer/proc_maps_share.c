// SPDX-License-Identifier: Apache-2.0
#include "proc_maps_share.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct slot {
	pid_t pid;
	uint64_t instance; /* 0: free */
	uint32_t mappings; /* lines, less the [vsyscall] gate (not in mm->map_count) */
	uint64_t at_ns;
	char *text;
	size_t len;
};

struct share {
	struct slot slots[PROC_MAPS_SHARE_SLOTS];
	unsigned next;             /* the slot the next offer of a new instance takes */
	const struct slot *active; /* the window's text, or NULL */
	bool open;                 /* a window is open, for: */
	pid_t pid;
	uint64_t instance;
	struct proc_maps_share_counters counters;
};

static _Thread_local struct share share;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t mappings_of(const char *text, size_t len)
{
	static const char gate[] = "[vsyscall]\n";
	uint32_t n = 0;

	for (const char *p = text, *end = text + len; p < end && (p = memchr(p, '\n', (size_t)(end - p))); p++)
		n++;
	if (n && len >= sizeof(gate) - 1 && !memcmp(text + len - (sizeof(gate) - 1), gate, sizeof(gate) - 1))
		n--;
	return n;
}

static void slot_clear(struct slot *s)
{
	free(s->text);
	*s = (struct slot){ 0 };
}

static struct slot *slot_of(pid_t pid, uint64_t instance)
{
	for (size_t i = 0; i < PROC_MAPS_SHARE_SLOTS; i++)
		if (share.slots[i].instance == instance && share.slots[i].pid == pid)
			return &share.slots[i];
	return NULL;
}

void proc_maps_share_offer(pid_t pid, uint64_t instance, const char *text, size_t len)
{
	struct slot *s;

	if (!instance || !len)
		return;
	s = slot_of(pid, instance);
	if (!s) {
		s = &share.slots[share.next];
		share.next = (share.next + 1) % PROC_MAPS_SHARE_SLOTS;
	}
	if (s == share.active)
		share.active = NULL;
	slot_clear(s);
	if (len > PROC_MAPS_SHARE_MAX_BYTES || !(s->text = malloc(len))) {
		share.counters.too_big++;
		return;
	}
	memcpy(s->text, text, len);
	*s = (struct slot){ .pid = pid, .instance = instance, .mappings = mappings_of(text, len), .at_ns = now_ns(),
			    .text = s->text, .len = len };
	share.counters.offered++;
}

void proc_maps_share_begin(pid_t pid, uint64_t instance, uint32_t map_count)
{
	const struct slot *s = instance && map_count ? slot_of(pid, instance) : NULL;

	share.open = true;
	share.pid = pid;
	share.instance = instance;
	share.active = s && (s->mappings & 0xffff) == (map_count & 0xffff) &&
				       now_ns() - s->at_ns < PROC_MAPS_SHARE_TTL_NS
			       ? s
			       : NULL;
}

void proc_maps_share_end(void)
{
	share.active = NULL;
	share.open = false;
}

void proc_maps_share_free(void)
{
	for (size_t i = 0; i < PROC_MAPS_SHARE_SLOTS; i++)
		slot_clear(&share.slots[i]);
	share.active = NULL;
	share.open = false;
}

/* The whole file at path, kept for the window's process when it fits: its other readers of this
 * record, and of the next ones while it maps as many, use it. NULL when it does not fit. */
static const struct slot *read_for_window(const char *path)
{
	size_t len = 0, cap = 16384;
	char *buf = malloc(cap);
	int fd = buf ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	const struct slot *s = NULL;

	while (fd >= 0) {
		ssize_t r;

		if (len == cap) {
			char *nb = cap < PROC_MAPS_SHARE_MAX_BYTES ? realloc(buf, cap * 2) : NULL;

			if (!nb)
				break; /* too big to keep: read as a file */
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (!r && len) {
				proc_maps_share_offer(share.pid, share.instance, buf, len);
				s = slot_of(share.pid, share.instance);
			}
			break;
		}
		len += (size_t)r;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return s && s->text ? s : NULL;
}

FILE *proc_maps_fopen(const char *proc_root, uint32_t pid)
{
	bool host = !proc_root || !strcmp(proc_root, "/proc");
	const struct slot *s = share.active;
	char path[4096];

	if ((size_t)snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", proc_root ? proc_root : "/proc", pid) >=
	    sizeof(path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (s && s->pid == (pid_t)pid && host) {
		FILE *f = fmemopen(s->text, s->len, "r");

		if (f) {
			share.counters.reused++;
			return f;
		}
	}
	share.counters.file_reads++;
	if (share.open && share.instance && share.pid == (pid_t)pid && host &&
	    (s = share.active = read_for_window(path))) {
		FILE *f = fmemopen(s->text, s->len, "r");

		if (f)
			return f;
	}
	return fopen(path, "re");
}

const struct proc_maps_share_counters *proc_maps_share_counters(void)
{
	return &share.counters;
}
