// SPDX-License-Identifier: Apache-2.0
#include "process/cgroup_ids.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Directory levels and directories visited by one walk: a host has hundreds of cgroups, a busy
 * Kubernetes node a few thousand. */
#define WALK_DEPTH 16
#define WALK_MAX_DIRS 65536

struct slot {
	uint64_t id;   /* 0: empty */
	bool found;
	struct cgroup_info info;
};

struct cgroup_ids {
	char root[PATH_MAX];
	uint64_t root_id;   /* the root cgroup's id (every task's on a host whose v2 hierarchy is unused) */
	struct slot *slots;
	size_t nslots;
	struct cgroup_ids_counters counters;
};

struct cgroup_ids *cgroup_ids_new(const char *root, size_t max_entries)
{
	struct cgroup_ids *c = calloc(1, sizeof(*c));
	struct stat st;

	if (!c)
		return NULL;
	snprintf(c->root, sizeof(c->root), "%s", root);
	if (!stat(root, &st))
		c->root_id = st.st_ino;
	c->nslots = max_entries ? max_entries : CGROUP_IDS_DEFAULT_MAX;
	c->slots = calloc(c->nslots, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return NULL;
	}
	return c;
}

void cgroup_ids_free(struct cgroup_ids *c)
{
	if (!c)
		return;
	free(c->slots);
	free(c);
}

struct walk {
	uint64_t want;
	char path[PATH_MAX];  /* relative to the root, "/a/b" */
	size_t dirs;
	bool found, bounded;
};

/* Search the directory fd (whose path is w->path) and below; closes fd. */
static void walk(int fd, unsigned depth, struct walk *w)
{
	DIR *d = fdopendir(fd);
	size_t len = strlen(w->path);
	struct dirent *de;

	if (!d) {
		close(fd);
		return;
	}
	while (!w->found && (de = readdir(d))) {
		int sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (++w->dirs > WALK_MAX_DIRS) {
			w->bounded = true;
			break;
		}
		if ((size_t)snprintf(w->path + len, sizeof(w->path) - len, "/%s", de->d_name) >= sizeof(w->path) - len)
			continue;
		/* On cgroup v2 a directory's inode number is its cgroup's id. */
		if (de->d_ino == w->want) {
			w->found = true;
			break;
		}
		if (depth + 1 < WALK_DEPTH) {
			sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			if (sub >= 0)
				walk(sub, depth + 1, w);
		}
		if (!w->found)
			w->path[len] = 0;
	}
	closedir(d);
}

int cgroup_ids_lookup(struct cgroup_ids *c, uint64_t id, struct cgroup_info *info)
{
	struct slot *s = &c->slots[(id * 0x9e3779b97f4a7c15ULL >> 32) % c->nslots];
	struct walk *w;
	char line[PATH_MAX + 8];
	int fd;

	if (!id)
		return -ENOENT;
	if (id == c->root_id) {
		c->counters.hits++;
		return -ENODATA;
	}
	if (s->id == id) {
		c->counters.hits++;
		if (!s->found)
			return -ENOENT;
		*info = s->info;
		return 0;
	}
	fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	w = calloc(1, sizeof(*w));
	if (!w) {
		close(fd);
		return -ENOMEM;
	}
	w->want = id;
	c->counters.walks++;
	walk(fd, 0, w);
	if (w->bounded)
		c->counters.walk_bound++;
	if (s->id)
		c->counters.replaced++;
	*s = (struct slot){ .id = id, .found = w->found };
	if (w->found) {
		/* As /proc/PID/cgroup shows a cgroup v2 path. */
		snprintf(line, sizeof(line), "0::%s\n", w->path);
		cgroup_parse(line, &s->info);
		*info = s->info;
	} else if (!w->bounded) {
		c->counters.not_found++;
	} else {
		s->id = 0; /* not known to be gone: look again next time */
	}
	free(w);
	return s->found ? 0 : -ENOENT;
}

const struct cgroup_ids_counters *cgroup_ids_counters(const struct cgroup_ids *c)
{
	return &c->counters;
}
