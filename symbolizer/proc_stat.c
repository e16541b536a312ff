// SPDX-License-Identifier: Apache-2.0
#include "proc_stat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int proc_stat_parse_start_ticks(const char *text, uint64_t *ticks)
{
	/* The name in parentheses may hold spaces and parentheses: fields count from the last ')'. */
	const char *p = strrchr(text, ')');
	char *end;

	for (unsigned field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || p[1] < '0' || p[1] > '9')
		return -EINVAL;
	errno = 0;
	*ticks = strtoull(p + 1, &end, 10);
	if (errno || (*end != ' ' && *end != '\n' && *end != 0))
		return -EINVAL;
	return 0;
}

int proc_stat_start_ticks(const char *proc_root, pid_t pid, uint64_t *ticks)
{
	char path[4096 + 32], buf[1024];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%d/stat", proc_root, (int)pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	/* One read: the kernel formats the whole line at once, and it is well under 1 KiB. */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = 0;
	return proc_stat_parse_start_ticks(buf, ticks);
}

uint64_t proc_stat_tick_ns(void)
{
	static uint64_t ns;

	if (!ns) {
		long hz = sysconf(_SC_CLK_TCK);

		ns = 1000000000ULL / (uint64_t)(hz > 0 ? hz : 100);
	}
	return ns;
}

bool proc_stat_same_start(uint64_t start_ns, uint64_t start_ticks)
{
	return start_ns / proc_stat_tick_ns() == start_ticks;
}
