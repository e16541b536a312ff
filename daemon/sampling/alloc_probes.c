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

/* A process as a scan sees it: a new pid, /proc directory (a new process) or executable is looked at
 * again. */
struct proc_key {
	uint64_t start, exe_ino; /* start: the inode of its /proc directory */
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
	ap->cfg.cgroup_dir = cfg->cgroup_dir ? strdup(cfg->cgroup_dir) : NULL;
	if (!ap->files || (cfg->cgroup_dir && !ap->cfg.cgroup_dir)) {
		alloc_probes_free(ap);
		return NULL;
	}
	return ap;
}

void alloc_probes_free(struct alloc_probes *ap)
{
	if (!ap)
		return;
	free(ap->files);
	free((char *)ap->cfg.cgroup_dir);
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

static int compare_proc(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct proc_key));
}

/*
 * Process pid as this scan sees it (ino: the inode of its /proc directory when the caller knows it, else
 * 0): remembered in next, its mappings read when the last scan did not see it. A process's /proc
 * directory gets a new inode when another process takes its pid, so the inode and the executable's
 * tell a new process, or an exec, without reading /proc/PID/stat: two stat()s for a pid a cgroup
 * or --pid names, one for a pid readdir() gave (its inode comes with the name).
 */
static void look_at(struct alloc_probes *ap, uint32_t pid, uint64_t ino, size_t *n)
{
	char path[96];
	struct proc_key key;
	struct stat st;

	if (*n == ALLOC_PROBES_MAX_PROCESSES) {
		ap->counters.processes_full++;
		return;
	}
	snprintf(path, sizeof(path), "%s/%" PRIu32, ap->proc_root, pid);
	if (!ino && !stat(path, &st))
		ino = st.st_ino;
	snprintf(path, sizeof(path), "%s/%" PRIu32 "/exe", ap->proc_root, pid);
	key = (struct proc_key){ .pid = pid, .start = ino, .exe_ino = stat(path, &st) ? 0 : st.st_ino };
	if (!ino || !key.exe_ino) /* a kernel thread, or gone */
		return;
	ap->next[(*n)++] = key;
	if (!bsearch(&key, ap->seen, ap->nseen, sizeof(key), compare_proc))
		read_maps(ap, pid);
}

/* Every process: the pids of the proc root's directory, with their inodes. */
static void scan_all(struct alloc_probes *ap, size_t *n)
{
	struct dirent *de;
	DIR *dir = opendir(ap->proc_root);

	if (!dir)
		return;
	while ((de = readdir(dir)))
		if (isdigit((unsigned char)de->d_name[0]))
			look_at(ap, (uint32_t)strtoul(de->d_name, NULL, 10), de->d_ino, n);
	closedir(dir);
}

/* The processes of cgroup directory dir (dirfd: open on it) and of its descendants, depth levels
 * down at most: what the in-kernel cgroup filter lets through. */
static void scan_cgroup(struct alloc_probes *ap, int dirfd, unsigned depth, size_t *n)
{
	int fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	struct dirent *de;
	FILE *f;
	DIR *dir;

	if (fd >= 0 && (f = fdopen(fd, "re"))) {
		unsigned long pid;

		while (fscanf(f, "%lu", &pid) == 1)
			look_at(ap, (uint32_t)pid, 0, n);
		fclose(f);
	} else if (fd >= 0) {
		close(fd);
	}
	if (!depth || !(dir = fdopendir(dirfd))) {
		close(dirfd);
		return;
	}
	while ((de = readdir(dir))) {
		int sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sub >= 0)
			scan_cgroup(ap, sub, depth - 1, n);
	}
	closedir(dir);
}

void alloc_probes_scan(struct alloc_probes *ap, uint64_t now)
{
	size_t n = 0;

	if (now && now - ap->last_scan < ALLOC_PROBES_SCAN_MS * 1000000ULL)
		return;
	ap->last_scan = now;
	if (!ap->next && !(ap->next = calloc(ALLOC_PROBES_MAX_PROCESSES, sizeof(*ap->next))))
		return;
	if (!ap->seen && !(ap->seen = calloc(ALLOC_PROBES_MAX_PROCESSES, sizeof(*ap->seen))))
		return;
	ap->counters.scans++;
	if (ap->cfg.npids) {
		for (size_t i = 0; i < ap->cfg.npids; i++)
			look_at(ap, (uint32_t)ap->cfg.pids[i], 0, &n);
	} else if (ap->cfg.cgroup_dir) {
		int fd = open(ap->cfg.cgroup_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd >= 0)
			scan_cgroup(ap, fd, ALLOC_PROBES_CGROUP_DEPTH, &n);
	} else {
		scan_all(ap, &n);
	}
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
