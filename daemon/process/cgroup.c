// SPDX-License-Identifier: Apache-2.0
#include "process/cgroup.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

/* Bytes of /proc/PID/cgroup read: a v1 host lists about a dozen hierarchies of short paths. */
#define CGROUP_FILE_MAX 16384
/* Directory levels walked when looking for a container's cgroups. */
#define CGROUP_WALK_DEPTH 16
#define CGROUP_PATHS_MAX 32

static const struct {
	const char *prefix;
	enum cgroup_runtime runtime;
} scope_prefixes[] = {
	{ "docker-", CGROUP_RUNTIME_DOCKER },
	{ "cri-containerd-", CGROUP_RUNTIME_CONTAINERD },
	{ "containerd-", CGROUP_RUNTIME_CONTAINERD },
	{ "crio-", CGROUP_RUNTIME_CRIO },
	{ "libpod-", CGROUP_RUNTIME_PODMAN },
};

const char *cgroup_runtime_name(enum cgroup_runtime runtime)
{
	switch (runtime) {
	case CGROUP_RUNTIME_NONE:
		return "";
	case CGROUP_RUNTIME_UNKNOWN:
		return "unknown";
	case CGROUP_RUNTIME_DOCKER:
		return "docker";
	case CGROUP_RUNTIME_CONTAINERD:
		return "containerd";
	case CGROUP_RUNTIME_CRIO:
		return "cri-o";
	case CGROUP_RUNTIME_PODMAN:
		return "podman";
	}
	return "";
}

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

static bool has_suffix(const char *s, size_t len, const char *suffix)
{
	size_t m = strlen(suffix);

	return len >= m && !memcmp(s + len - m, suffix, m);
}

static bool contains(const char *s, size_t len, const char *needle)
{
	size_t m = strlen(needle);

	for (size_t i = 0; i + m <= len; i++)
		if (!memcmp(s + i, needle, m))
			return true;
	return false;
}

static void copy_lower(char *dst, const char *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = (char)tolower((unsigned char)src[i]);
	dst[n] = 0;
}

bool cgroup_component_container_id(const char *c, size_t len, char *id, enum cgroup_runtime *runtime)
{
	enum cgroup_runtime rt = CGROUP_RUNTIME_UNKNOWN;
	const char *hex;

	/* conmon (Podman, CRI-O) watches a container from a cgroup of its own: it is not the container. */
	if (contains(c, len, "conmon"))
		return false;
	if (has_suffix(c, len, ".scope"))
		len -= strlen(".scope");
	if (len < CGROUP_CONTAINER_ID_LEN)
		return false;
	hex = c + len - CGROUP_CONTAINER_ID_LEN;
	if (!all_hex(hex, CGROUP_CONTAINER_ID_LEN))
		return false;
	if (hex != c) {
		size_t plen = (size_t)(hex - c);
		bool known = false;

		/* "cri-containerd-ID", "crio-ID", or the systemd driver's "...:cri-containerd:ID". */
		if (hex[-1] != '-' && hex[-1] != ':')
			return false;
		for (size_t i = 0; i < sizeof(scope_prefixes) / sizeof(scope_prefixes[0]); i++) {
			size_t m = strlen(scope_prefixes[i].prefix);

			if (plen >= m && !memcmp(hex - m, scope_prefixes[i].prefix, m - 1)) {
				rt = scope_prefixes[i].runtime;
				known = true;
				break;
			}
		}
		if (!known)
			rt = CGROUP_RUNTIME_UNKNOWN;
	}
	copy_lower(id, hex, CGROUP_CONTAINER_ID_LEN);
	if (runtime)
		*runtime = rt;
	return true;
}

/* A pod uid with '-' or '_' separators (the systemd driver escapes '-' as '_'), normalised to '-'. */
static bool parse_uid(const char *s, size_t len, char *uid)
{
	if (len != CGROUP_POD_UID_LEN)
		return false;
	for (size_t i = 0; i < len; i++) {
		bool sep = i == 8 || i == 13 || i == 18 || i == 23;

		if (sep ? (s[i] != '-' && s[i] != '_') : !isxdigit((unsigned char)s[i]))
			return false;
		uid[i] = sep ? '-' : (char)tolower((unsigned char)s[i]);
	}
	uid[len] = 0;
	return true;
}

/* "podUID" (cgroupfs) or "kubepods-QOS-podUID.slice" (systemd). */
static bool component_pod_uid(const char *c, size_t len, char *uid)
{
	if (has_suffix(c, len, ".slice")) {
		len -= strlen(".slice");
		for (size_t i = len; i-- > 0;)
			if (c[i] == '-') {
				if (len - i - 1 < 3 || memcmp(c + i + 1, "pod", 3))
					return false;
				return parse_uid(c + i + 4, len - i - 4, uid);
			}
		return false;
	}
	return len > 3 && !memcmp(c, "pod", 3) && parse_uid(c + 3, len - 3, uid);
}

/* Fill what info still lacks from one cgroup path. */
static void parse_path(const char *path, size_t plen, struct cgroup_info *info)
{
	const char *comp[128];
	size_t lens[128], n = 0;
	bool in_kubepods = false, have_id = info->container_id[0] != 0;
	char unit[CGROUP_UNIT_LEN] = "", scope[CGROUP_UNIT_LEN] = "";

	for (size_t i = 0; i < plen && n < 128;) {
		size_t j = i;

		while (j < plen && path[j] != '/')
			j++;
		if (j > i && !(j - i == 2 && !memcmp(path + i, "..", 2))) {
			comp[n] = path + i;
			lens[n++] = j - i;
		}
		i = j + 1;
	}
	for (size_t k = 0; k < n; k++) {
		const char *c = comp[k];
		size_t len = lens[k];

		if (len >= 8 && !memcmp(c, "kubepods", 8))
			in_kubepods = true;
		if (in_kubepods && !info->pod_uid[0])
			component_pod_uid(c, len, info->pod_uid);
		if (len < CGROUP_UNIT_LEN && has_suffix(c, len, ".service")) {
			memcpy(unit, c, len);
			unit[len] = 0;
		} else if (len < CGROUP_UNIT_LEN && has_suffix(c, len, ".scope")) {
			memcpy(scope, c, len);
			scope[len] = 0;
		}
	}
	/* The deepest component naming a container; a nested cgroup ("libpod-ID.scope/container") is inside it. */
	for (size_t k = n; k-- > 0 && !info->container_id[0];)
		if (cgroup_component_container_id(comp[k], lens[k], info->container_id, &info->runtime) &&
		    info->runtime == CGROUP_RUNTIME_UNKNOWN && k > 0 && lens[k - 1] == 6 &&
		    !memcmp(comp[k - 1], "docker", 6))
			info->runtime = CGROUP_RUNTIME_DOCKER; /* Docker's cgroupfs style: /docker/ID */
	if (!info->systemd_unit[0]) {
		/* A service's unit; a scope only when it is not a container's (session-2.scope, run-u7.scope). */
		if (unit[0])
			memcpy(info->systemd_unit, unit, sizeof(unit));
		else if (scope[0] && !have_id && !info->container_id[0] && !in_kubepods)
			memcpy(info->systemd_unit, scope, sizeof(scope));
	}
}

void cgroup_parse(const char *text, struct cgroup_info *info)
{
	struct {
		const char *path;
		size_t len;
		int rank; /* 0: unified, 1: name=systemd, 2: another v1 hierarchy */
	} paths[CGROUP_PATHS_MAX];
	size_t n = 0;

	memset(info, 0, sizeof(*info));
	for (const char *line = text; line && *line && n < CGROUP_PATHS_MAX;) {
		const char *end = strchr(line, '\n'), *c1, *c2;
		size_t len = end ? (size_t)(end - line) : strlen(line);

		c1 = memchr(line, ':', len);
		c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
		if (c2) {
			bool unified = c1 == line + 1 && line[0] == '0' && c2 == c1 + 1;
			bool systemd = (size_t)(c2 - c1 - 1) == 12 && !memcmp(c1 + 1, "name=systemd", 12);

			paths[n].path = c2 + 1;
			paths[n].len = len - (size_t)(c2 + 1 - line);
			paths[n].rank = unified ? 0 : systemd ? 1 : 2;
			n++;
		}
		line = end ? end + 1 : NULL;
	}
	for (int rank = 0; rank <= 2; rank++)
		for (size_t i = 0; i < n; i++)
			if (paths[i].rank == rank)
				parse_path(paths[i].path, paths[i].len, info);
}

int cgroup_read_pid(pid_t pid, struct cgroup_info *info)
{
	char path[64], *buf;
	ssize_t n, total = 0;
	int fd, r = 0;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	buf = malloc(CGROUP_FILE_MAX);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (total < CGROUP_FILE_MAX - 1 && (n = read(fd, buf + total, CGROUP_FILE_MAX - 1 - (size_t)total)) > 0)
		total += n;
	if (n < 0)
		r = errno == ESRCH ? -ESRCH : -errno;
	close(fd);
	if (!r) {
		buf[total] = 0;
		cgroup_parse(buf, info);
	}
	free(buf);
	return r;
}

static bool is_cgroup2(const char *path)
{
	struct statfs fs;

	return !statfs(path, &fs) && fs.f_type == CGROUP2_SUPER_MAGIC;
}

const char *cgroup_v2_root(void)
{
	if (is_cgroup2("/sys/fs/cgroup"))
		return "/sys/fs/cgroup";
	if (is_cgroup2("/sys/fs/cgroup/unified"))
		return "/sys/fs/cgroup/unified";
	return NULL;
}

int cgroup_path_of(const char *root, const char *path, char *full, size_t len)
{
	size_t rlen = strlen(root);

	if (!strncmp(path, root, rlen) && (path[rlen] == '/' || !path[rlen]))
		return (size_t)snprintf(full, len, "%s", path) >= len ? -ENAMETOOLONG : 0;
	return (size_t)snprintf(full, len, "%s/%s", root, path + (path[0] == '/')) >= len ? -ENAMETOOLONG : 0;
}

int cgroup_id_of_path(const char *root, const char *path, uint64_t *id)
{
	char full[4096];
	struct stat st;
	int r = cgroup_path_of(root, path, full, sizeof(full));

	if (r)
		return r;
	if (stat(full, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || !is_cgroup2(full))
		return -ENOTDIR;
	/* On cgroup v2 a cgroup directory's inode number is the cgroup id. */
	*id = st.st_ino;
	return 0;
}

struct container_walk {
	const char *want;
	size_t want_len;
	uint64_t *ids;
	size_t max, n;
};

static void walk(int fd, unsigned depth, struct container_walk *w)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;

	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		char id[CGROUP_CONTAINER_ID_LEN + 1];
		struct stat st;
		int sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (cgroup_component_container_id(de->d_name, strlen(de->d_name), id, NULL) &&
		    !strncmp(id, w->want, w->want_len) && !fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
			if (w->n < w->max)
				w->ids[w->n] = st.st_ino;
			w->n++;
			continue; /* its sub-cgroups are matched by the filter through their ancestor */
		}
		if (depth + 1 >= CGROUP_WALK_DEPTH)
			continue;
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub >= 0)
			walk(sub, depth + 1, w);
	}
	closedir(d);
}

int cgroup_find_container(const char *root, const char *container, uint64_t *ids, size_t max, size_t *n)
{
	char want[CGROUP_CONTAINER_ID_LEN + 1];
	size_t len = strlen(container);
	struct container_walk w = { .want = want, .want_len = len, .ids = ids, .max = max };
	int fd;

	if (len < 12 || len > CGROUP_CONTAINER_ID_LEN || !all_hex(container, len))
		return -EINVAL;
	copy_lower(want, container, len);
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	walk(fd, 0, &w);
	*n = w.n;
	return 0;
}
