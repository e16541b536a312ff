// SPDX-License-Identifier: Apache-2.0
#include "cache_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory of path into dir (PATH_MAX bytes), and where the file's name starts in path. */
const char *cache_file_split_path(const char *path, char *dir)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		strcpy(dir, ".");
		return path;
	}
	if ((size_t)(slash - path) >= PATH_MAX)
		return NULL;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = 0;
	if (slash == path)
		strcpy(dir, "/");
	return slash + 1;
}

int cache_file_open_trusted(const char *path)
{
	char dir[PATH_MAX];
	const char *name = cache_file_split_path(path, dir);
	struct stat st;
	int dfd, fd;

	if (!name)
		return errno = ENAMETOOLONG, -1;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	if (fstat(dfd, &st) || (st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 022)) {
		close(dfd);
		return errno = EPERM, -1;
	}
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 && errno == ELOOP)
		errno = EPERM;
	close(dfd);
	return fd;
}

int cache_file_open_own(const char *path)
{
	struct stat st;
	int fd = cache_file_open_trusted(path);

	if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))) {
		close(fd);
		return errno = EPERM, -1;
	}
	return fd;
}

void cache_file_make_directory(const char *path)
{
	char dir[PATH_MAX], parent[PATH_MAX];

	if (!cache_file_split_path(path, dir))
		return;
	if (cache_file_split_path(dir, parent))
		(void)mkdir(parent, 0700);
	(void)mkdir(dir, 0700);
}

bool cache_file_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

