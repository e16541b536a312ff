// SPDX-License-Identifier: Apache-2.0
#include "sampling/alloc_probes.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "process/usdt_notes.h"

struct file_key {
	uint64_t dev, ino;
};

/* A process as a scan sees it: a new pid, start time or executable is looked at again. */
struct proc_key {
	uint64_t start, exe_ino;
	uint32_t pid, pad;
};

struct alloc_probes {
	struct alloc_probes_config cfg;
	const char *proc_root;
	struct file_key *files; /* every file looked at, probes or not */
	size_t nfiles;
	struct proc_key *seen;  /* the processes of the last scan, sorted */
	size_t nseen;
	struct proc_key *next;  /* this scan's, then swapped with seen */
	uint64_t last_scan;
	struct alloc_probes_counters counters;
};

struct alloc_probes *alloc_probes_new(const struct alloc_probes_config *cfg)
{
	struct alloc_probes *ap = calloc(1, sizeof(*ap));

	if (!ap)
		return NULL;
	ap->cfg = *cfg;
	ap->proc_root = cfg->proc_root ? cfg->proc_root : "/proc";
	ap->files = calloc(ALLOC_PROBES_MAX_FILES, sizeof(*ap->files));
	if (!ap->files) {
		free(ap);
		return NULL;
	}
	return ap;
}

void alloc_probes_free(struct alloc_probes *ap)
{
	if (!ap)
		return;
	free(ap->files);
	free(ap->seen);
	free(ap->next);
	free(ap);
}

static bool file_known(const struct alloc_probes *ap, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < ap->nfiles; i++)
		if (ap->files[i].dev == dev && ap->files[i].ino == ino)
			return true;
	return false;
}

/* Look at the file open at path (dev, ino: its identity) once: attach it when it has the probes. */
static int check_file(struct alloc_probes *ap, const char *path, uint64_t dev, uint64_t ino)
{
	bool has;
	int fd, r;

	if (file_known(ap, dev, ino))
		return 0;
	if (ap->nfiles == ALLOC_PROBES_MAX_FILES) {
		ap->counters.files_full++;
		return -ENOSPC;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno; /* not remembered: another process may reach it */
	ap->files[ap->nfiles++] = (struct file_key){ .dev = dev, .ino = ino };
	ap->counters.files_checked++;
	has = usdt_notes_have_provider(fd, ALLOC_PROBES_PROVIDER);
	close(fd);
	if (!has)
		return -ENOENT;
	r = ap->cfg.attach(ap->cfg.attach_ctx, path);
	if (r) {
		ap->counters.attach_failed++;
		return r;
	}
	ap->counters.files_attached++;
	return 0;
}

int alloc_probes_add_file(struct alloc_probes *ap, const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	return check_file(ap, path, st.st_dev, st.st_ino);
}

/* The executable file mappings of pid: each file looked at once. */
static void read_maps(struct alloc_probes *ap, uint32_t pid)
{
	char path[96], line[4096], file[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", ap->proc_root, pid);
	f = fopen(path, "re");
	if (!f)
		return;
	ap->counters.processes_read++;
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end, offset, ino;
		unsigned major, minor;
		char perms[8];
		int name_at = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &start, &end, perms,
			   &offset, &major, &minor, &ino, &name_at) < 7 ||
		    perms[2] != 'x' || !ino || line[name_at] != '/')
			continue;
		if (file_known(ap, makedev(major, minor), ino))
			continue;
		/* map_files: the very file mapped, whatever mount namespace or path it came from. */
		snprintf(file, sizeof(file), "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, ap->proc_root, pid, start,
			 end);
		check_file(ap, file, makedev(major, minor), ino);
	}
	fclose(f);
}

/* Field 22 of /proc/PID/stat: the start time in clock ticks; 0 when unreadable. */
static uint64_t start_time(const char *proc_root, uint32_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/stat", proc_root, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &start) != 1)
		return 0;
	return start;
}

static int compare_proc(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct proc_key));
}

static bool wanted(const struct alloc_probes *ap, uint32_t pid)
{
	if (!ap->cfg.npids)
		return true;
	for (size_t i = 0; i < ap->cfg.npids; i++)
		if ((uint32_t)ap->cfg.pids[i] == pid)
			return true;
	return false;
}

void alloc_probes_scan(struct alloc_probes *ap, uint64_t now)
{
	struct dirent *de;
	size_t n = 0;
	DIR *dir;

	if (now && now - ap->last_scan < ALLOC_PROBES_SCAN_MS * 1000000ULL)
		return;
	ap->last_scan = now;
	if (!ap->next && !(ap->next = calloc(ALLOC_PROBES_MAX_PROCESSES, sizeof(*ap->next))))
		return;
	if (!ap->seen && !(ap->seen = calloc(ALLOC_PROBES_MAX_PROCESSES, sizeof(*ap->seen))))
		return;
	dir = opendir(ap->proc_root);
	if (!dir)
		return;
	ap->counters.scans++;
	while ((de = readdir(dir))) {
		char exe[96];
		struct proc_key key;
		struct stat st;
		uint32_t pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = (uint32_t)strtoul(de->d_name, NULL, 10);
		if (!wanted(ap, pid))
			continue;
		if (n == ALLOC_PROBES_MAX_PROCESSES) {
			ap->counters.processes_full++;
			break;
		}
		snprintf(exe, sizeof(exe), "%s/%" PRIu32 "/exe", ap->proc_root, pid);
		key = (struct proc_key){ .pid = pid, .start = start_time(ap->proc_root, pid),
					 .exe_ino = stat(exe, &st) ? 0 : st.st_ino };
		if (!key.exe_ino) /* a kernel thread, or gone */
			continue;
		ap->next[n++] = key;
		if (!bsearch(&key, ap->seen, ap->nseen, sizeof(key), compare_proc))
			read_maps(ap, pid);
	}
	closedir(dir);
	qsort(ap->next, n, sizeof(*ap->next), compare_proc);
	{
		struct proc_key *t = ap->seen;

		ap->seen = ap->next;
		ap->next = t;
		ap->nseen = n;
	}
}

const struct alloc_probes_counters *alloc_probes_counters(const struct alloc_probes *ap)
{
	return &ap->counters;
}
