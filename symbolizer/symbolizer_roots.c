// SPDX-License-Identifier: Apache-2.0
/*
 * Processes' root directories, held open (O_PATH), one per distinct root (the host's, each
 * container's): a process that exits before its modules were opened (a short-lived program, a
 * loaded host whose opens waited in the opener's queue) still has its files opened, through the
 * root it had, at its profile's build. The file's device and inode are checked against its mapping
 * as for any open, so a path that names another file now is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolizer_internal.h"

/* The root of pid: its device and inode. 0 or -errno. */
static int root_identity(pid_t pid, uint64_t *dev, uint64_t *ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	if (stat(path, &st))
		return -errno;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

static struct sym_root *find_root(struct symbolizer *s, uint64_t dev, uint64_t ino)
{
	for (unsigned i = 0; i < s->nroots; i++)
		if (s->roots[i].dev == dev && s->roots[i].ino == ino)
			return &s->roots[i];
	return NULL;
}

void symbolizer__hold_root(struct symbolizer *s, struct sym_process *p)
{
	symbolizer__hold_root_of(s, p, p->pid);
}

void symbolizer__hold_root_of(struct symbolizer *s, struct sym_process *p, pid_t root_pid)
{
	struct sym_root *r;
	uint64_t dev = 0, ino = 0;
	int fd;

	if (root_identity(root_pid, &dev, &ino))
		return;
	r = find_root(s, dev, ino);
	if (!r) {
		fd = symbolizer__open_root(root_pid);
		if (fd < 0)
			return;
		if (s->nroots < SYM_ROOTS) {
			r = &s->roots[s->nroots++];
		} else {
			/* Full: the least recently used root goes (its processes' files, once they exit,
			 * can no longer be opened: counted). */
			r = &s->roots[0];
			for (unsigned i = 1; i < SYM_ROOTS; i++)
				if (s->roots[i].used < r->used)
					r = &s->roots[i];
			close(r->fd);
			s->stats.roots_replaced++;
		}
		*r = (struct sym_root){ .dev = dev, .ino = ino, .fd = fd };
	}
	r->used = ++s->tick;
	p->root_dev = dev;
	p->root_ino = ino;
	p->root_held = true;
}

int symbolizer__open_root_of(struct symbolizer *s, pid_t pid)
{
	int fd = symbolizer__open_root(pid);

	if (fd != -ENOENT && fd != -ESRCH)
		return fd;
	for (struct sym_process *p = s->buckets[(uint32_t)pid % PROCESS_BUCKETS]; p; p = p->next) {
		struct sym_root *r = p->pid == pid && p->root_held ? find_root(s, p->root_dev, p->root_ino) : NULL;
		int copy = r ? fcntl(r->fd, F_DUPFD_CLOEXEC, 0) : -1;

		if (copy >= 0) {
			r->used = ++s->tick;
			s->stats.roots_used_after_exit++;
			return copy;
		}
	}
	return fd;
}

void symbolizer__roots_free(struct symbolizer *s)
{
	for (unsigned i = 0; i < s->nroots; i++)
		close(s->roots[i].fd);
	s->nroots = 0;
}
