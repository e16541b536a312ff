// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "output/output_file.h"

/* Names tried when one is taken (by a leftover, or planted): each is random, so a few suffice. */
#define OUTPUT_FILE_ATTEMPTS 32

struct output_file {
	char *path; /* the final name */
	char *tmp;  /* the temporary file beside it; NULL when writing to path itself (not a file) */
	FILE *stream;
};

static uint64_t random_suffix(void)
{
	struct timespec ts;
	uint64_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == sizeof(v))
		return v;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_sec * 1000000000u ^ (uint64_t)ts.tv_nsec;
}

/* Accepts one half built. */
static void output_file_free(struct output_file *f)
{
	if (!f)
		return;
	free(f->tmp);
	free(f->path);
	free(f);
}

/* path is there and not a regular file or a directory: a device (/dev/null), a FIFO, a socket, or a
 * link to one (/dev/stdout). Renaming over it would replace the device itself, as root /dev/null. */
static bool is_special(const char *path)
{
	struct stat st;

	return !stat(path, &st) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

/* Written in place: opened without O_CREAT. O_NONBLOCK for the open only, so that a FIFO without a
 * reader is ENXIO at once rather than a wait; writes block as usual. */
static int open_special(struct output_file *f)
{
	int fd = open(f->path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK), flags;

	if (fd < 0)
		return -1;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

struct output_file *output_file_open(const char *path)
{
	size_t len = strlen(path) + sizeof(".tmp-") + 16;
	struct output_file *f = calloc(1, sizeof(*f));
	int fd = -1, err;

	if (f && (f->path = strdup(path)) && is_special(path)) {
		fd = open_special(f);
		if (fd < 0) {
			err = errno;
			goto fail;
		}
		goto stream;
	}
	if (!f || !f->path || !(f->tmp = malloc(len))) {
		err = ENOMEM;
		goto fail;
	}
	for (int i = 0; i < OUTPUT_FILE_ATTEMPTS && fd < 0; i++) {
		snprintf(f->tmp, len, "%s.tmp-%016" PRIx64, path, random_suffix());
		fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		err = errno;
		goto fail;
	}
stream:
	f->stream = fdopen(fd, "w");
	if (!f->stream) {
		err = errno;
		close(fd);
		if (f->tmp)
			unlink(f->tmp);
		goto fail;
	}
	return f;
fail:
	output_file_free(f);
	errno = err;
	return NULL;
}

FILE *output_file_stream(struct output_file *f)
{
	return f->stream;
}

/* Sync the directory as well, so that after a crash the rename is there too. Best effort: the file
 * is in place whatever this says. */
static void sync_directory(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
	int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
}

int output_file_commit(struct output_file *f)
{
	int r = 0;

	/* A stream that failed earlier may not fail its flush again: ferror() keeps the news. */
	if (fflush(f->stream))
		r = -errno;
	else if (ferror(f->stream))
		r = -EIO;
	/* A device or a pipe may not sync (EINVAL): that is no failure of the write. */
	if (!r && fsync(fileno(f->stream)) && (f->tmp || (errno != EINVAL && errno != EROFS)))
		r = -errno;
	if (fclose(f->stream) && !r)
		r = -errno;
	if (!f->tmp) {
		output_file_free(f);
		return r;
	}
	if (!r && rename(f->tmp, f->path))
		r = -errno;
	if (r)
		unlink(f->tmp);
	else
		sync_directory(f->path);
	output_file_free(f);
	return r;
}

void output_file_abort(struct output_file *f)
{
	if (!f)
		return;
	fclose(f->stream);
	if (f->tmp)
		unlink(f->tmp);
	output_file_free(f);
}

int output_file_check(const char *path)
{
	struct output_file *f;
	struct stat st;

	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return -EISDIR;
	/* Opening a FIFO now would need its reader now; it may come later. */
	if (is_special(path))
		return access(path, W_OK) ? -errno : 0;
	f = output_file_open(path);
	if (!f)
		return -errno;
	output_file_abort(f);
	return 0;
}

int output_file_fallback(const char *dir, const char *path, char *buf, size_t size)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	int n = snprintf(buf, size, "%s/otelprofd-XXXXXX-%s", dir, base), fd;

	if (!*base)
		return -EINVAL;
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	/* mkostemps(): O_CREAT | O_EXCL, 0600, a random name; in a sticky directory (/tmp, /var/tmp) no
	 * other user can then replace it, and the rename of the profile over it stays ours. */
	fd = mkostemps(buf, (int)strlen(base) + 1, O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}
