// SPDX-License-Identifier: Apache-2.0
#include "proc_maps_share.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct share {
	bool open;
	pid_t pid;
	char *text; /* NULL: nothing kept */
	size_t len;
	struct proc_maps_share_counters counters;
};

static _Thread_local struct share share;

void proc_maps_share_begin(void)
{
	share.open = true;
}

void proc_maps_share_end(void)
{
	free(share.text);
	share.text = NULL;
	share.len = 0;
	share.open = false;
}

void proc_maps_share_offer(pid_t pid, const char *text, size_t len)
{
	if (!share.open || !len)
		return;
	free(share.text);
	share.text = NULL;
	if (len > PROC_MAPS_SHARE_MAX_BYTES || !(share.text = malloc(len))) {
		share.counters.too_big++;
		return;
	}
	memcpy(share.text, text, len);
	share.len = len;
	share.pid = pid;
	share.counters.offered++;
}

FILE *proc_maps_fopen(const char *proc_root, uint32_t pid)
{
	char path[4096];

	if (share.text && share.pid == (pid_t)pid && (!proc_root || !strcmp(proc_root, "/proc"))) {
		FILE *f = fmemopen(share.text, share.len, "r");

		if (f) {
			share.counters.reused++;
			return f;
		}
	}
	share.counters.file_reads++;
	if ((size_t)snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", proc_root ? proc_root : "/proc", pid) >=
	    sizeof(path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return fopen(path, "re");
}

const struct proc_maps_share_counters *proc_maps_share_counters(void)
{
	return &share.counters;
}
