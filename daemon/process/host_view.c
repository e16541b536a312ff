// SPDX-License-Identifier: Apache-2.0
#include "process/host_view.h"

#include <stdio.h>
#include <sys/stat.h>

static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) || stat(b, &sb))
		return -1;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int host_view_same_namespace(const char *proc, const char *type)
{
	char self[4096], init[4096];

	proc = proc ? proc : "/proc";
	snprintf(self, sizeof(self), "%s/self/ns/%s", proc, type);
	snprintf(init, sizeof(init), "%s/1/ns/%s", proc, type);
	return same_file(self, init);
}

int host_view_same_root(const char *proc)
{
	char init[4096];

	snprintf(init, sizeof(init), "%s/1/root/", proc ? proc : "/proc");
	return same_file("/", init);
}
