// SPDX-License-Identifier: Apache-2.0
#include "vdso.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proc_maps.h"

/* The [vdso] mapping of this process: its range, from /proc/self/maps. */
static int own_range(uint64_t *start, uint64_t *end)
{
	char line[512];
	int r = -ENOENT;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return -errno;
	while (r && fgets(line, sizeof(line), f)) {
		struct proc_map pm;

		if (proc_map_parse_line(line, &pm) && !strcmp(pm.path, VDSO_MAP_NAME)) {
			*start = pm.start;
			*end = pm.end;
			r = 0;
		}
	}
	fclose(f);
	return r;
}

int vdso_image_fd(size_t *size)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR), start, end;
	size_t len, done = 0;
	int fd, r;

	if (!base)
		return -ENOENT;
	if ((r = own_range(&start, &end)))
		return r;
	if (base != start || end <= start || memcmp((const void *)(uintptr_t)start, "\177ELF", 4))
		return -ENOENT;
	len = (size_t)(end - start);
	if (len > VDSO_MAX_BYTES)
		return -EFBIG;
	if ((fd = memfd_create("vdso", MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0)
		return -errno;
	while (done < len) {
		ssize_t n = write(fd, (const char *)(uintptr_t)start + done, len - done);

		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			close(fd);
			return r;
		}
		done += (size_t)n;
	}
	fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
	*size = len;
	return fd;
}
