// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diff/readers.h"

/* The whole file, at most READ_MAX_FILE bytes. */
static int slurp(const char *path, uint8_t **out, size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0, cap = 1 << 16;
	uint8_t *buf = NULL;
	struct stat st;
	ssize_t got;

	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "%s", strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "is a directory");
		goto fail;
	}
	do {
		if (!buf || n == cap) {
			uint8_t *grown;

			cap = buf ? cap * 2 : cap;
			if (n >= READ_MAX_FILE) {
				snprintf(err, errlen, "larger than %u MiB", READ_MAX_FILE >> 20);
				goto fail;
			}
			grown = realloc(buf, cap + 1);
			if (!grown) {
				snprintf(err, errlen, "out of memory");
				goto fail;
			}
			buf = grown;
		}
		got = read(fd, buf + n, cap - n);
		if (got < 0 && errno != EINTR) {
			snprintf(err, errlen, "%s", strerror(errno));
			goto fail;
		}
		n += got > 0 ? (size_t)got : 0;
	} while (got != 0);
	close(fd);
	*out = buf;
	*len = n;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return -EINVAL;
}

/* Text (folded stacks) has no NUL and no control bytes but tabs and line ends. */
static bool looks_like_text(const uint8_t *d, size_t len)
{
	for (size_t i = 0; i < len && i < 4096; i++)
		if (d[i] < 0x20 && d[i] != '\n' && d[i] != '\r' && d[i] != '\t')
			return false;
	return true;
}

int read_profile_file(const char *path, const struct read_target *t, struct read_info *info, char *err,
		      size_t errlen)
{
	uint8_t *data;
	size_t len;
	int r = slurp(path, &data, &len, err, errlen);

	if (r)
		return r;
	if (!len) {
		snprintf(err, errlen, "empty file");
		r = -EINVAL;
	} else if (!(len >= 2 && data[0] == 0x1f && data[1] == 0x8b) && looks_like_text(data, len)) {
		r = read_folded((const char *)data, len, t, info, err, errlen);
	} else {
		r = read_pprof(data, len, t, info, err, errlen);
	}
	free(data);
	return r;
}
