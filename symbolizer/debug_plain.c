// SPDX-License-Identifier: Apache-2.0
#include "debug_plain.h"
#include "cache_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

/* A build id in hex, as the copy's name: nothing else may reach the path. */
static bool name_ok(const char *build_id)
{
	size_t n = build_id ? strlen(build_id) : 0;

	if (n < 2 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((build_id[i] >= '0' && build_id[i] <= '9') || (build_id[i] >= 'a' && build_id[i] <= 'f')))
			return false;
	return true;
}

static bool copy_file(int in, int out, off_t size)
{
	off_t at = 0;

	while (at < size) {
		ssize_t n = sendfile(out, in, &at, (size_t)(size - at));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
	}
	return true;
}

/* fd's compressed .debug_* sections decompressed in place (libelf lays the file out again). */
static bool decompress(int fd)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx, n = 0;
	bool ok = false;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_RDWR, NULL);
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *name;

		if (!gelf_getshdr(scn, &shdr))
			goto out;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!(shdr.sh_flags & SHF_COMPRESSED) || !name || strncmp(name, ".debug_", 7))
			continue;
		if (elf_compress(scn, 0, 0) < 0)
			goto out;
		n++;
	}
	ok = n && elf_update(elf, ELF_C_WRITE) >= 0;
out:
	elf_end(elf);
	return ok;
}

/* Remove the oldest files of dir until one more of adding bytes fits its bounds. */
static bool make_room(const char *dir, uint64_t adding, uint64_t *evicted)
{
	for (int round = 0; round <= DEBUG_PLAIN_MAX_FILES; round++) {
		DIR *d = opendir(dir);
		struct dirent *e;
		char oldest[NAME_MAX + 1] = "";
		struct timespec oldest_time = { 0 };
		uint64_t files = 0, bytes = 0;

		if (!d)
			return false;
		while ((e = readdir(d))) {
			struct stat st;

			if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
				continue;
			files++;
			bytes += (uint64_t)st.st_size;
			if (!oldest[0] || st.st_mtim.tv_sec < oldest_time.tv_sec ||
			    (st.st_mtim.tv_sec == oldest_time.tv_sec && st.st_mtim.tv_nsec < oldest_time.tv_nsec)) {
				snprintf(oldest, sizeof(oldest), "%s", e->d_name);
				oldest_time = st.st_mtim;
			}
		}
		if (files < DEBUG_PLAIN_MAX_FILES && bytes + adding <= DEBUG_PLAIN_MAX_BYTES) {
			closedir(d);
			return true;
		}
		if (!oldest[0] || unlinkat(dirfd(d), oldest, 0)) {
			closedir(d);
			return false;
		}
		(*evicted)++;
		closedir(d);
	}
	return false;
}

int debug_plain_open(const char *dir, int fd, const char *build_id, size_t inflated, size_t min_inflated,
		     enum debug_plain_result *result, uint64_t *evicted)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	struct stat st;
	int out;
	bool ok;

	*result = DEBUG_PLAIN_NONE;
	if (!dir || !*dir || inflated < min_inflated || !name_ok(build_id))
		return -1;
	if (snprintf(path, sizeof(path), "%s/%s.debug", dir, build_id) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, build_id) >= (int)sizeof(tmp))
		return -1;
	*result = DEBUG_PLAIN_FAILED;
	out = cache_file_open_own(path);
	if (out >= 0) {
		*result = DEBUG_PLAIN_READ;
		return out;
	}
	if (errno != ENOENT || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size + inflated > DEBUG_PLAIN_MAX_BYTES)
		return -1;
	cache_file_make_directory(path);
	if (!make_room(dir, (uint64_t)st.st_size + inflated, evicted))
		return -1;
	out = mkostemp(tmp, O_CLOEXEC); /* mode 0600 */
	if (out < 0)
		return -1;
	ok = !fchmod(out, 0600) && copy_file(fd, out, st.st_size) && decompress(out);
	ok = !close(out) && ok && !rename(tmp, path);
	if (!ok) {
		unlink(tmp);
		return -1;
	}
	out = cache_file_open_own(path);
	if (out >= 0)
		*result = DEBUG_PLAIN_WRITTEN;
	return out;
}
