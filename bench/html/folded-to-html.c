// SPDX-License-Identifier: Apache-2.0
/*
 * bench/html: a folded file (gen_stacks.py) as otelprofd's HTML flame graph page, through the same
 * reader (diff/readers.h) and page writer (output/html_page.h) as `otelprofd diff` and -o FILE.html.
 * Usage: folded-to-html IN.folded OUT.html; prints the nodes and the time taken.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "diff/readers.h"
#include "output/html_page.h"

int main(int argc, char **argv)
{
	struct flame *f = flame_new(0);
	struct read_info info;
	struct timespec a, b;
	char err[256];
	FILE *out;
	int view;

	if (argc != 3 || !f)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &a);
	view = flame_add_view(f, "On-CPU", "samples", false);
	flame_set_title(f, "bench/html: synthetic profile", argv[1]);
	if (read_profile_file(argv[1], &(struct read_target){ .flame = f, .view = view }, &info, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", argv[1], err);
		return 2;
	}
	out = fopen(argv[2], "w");
	if (!out || html_page_write(f, out) || fclose(out))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%llu stacks, %llu samples, written in %.0f ms\n", (unsigned long long)info.stacks,
	       (unsigned long long)info.total, (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
	flame_free(f);
	return 0;
}
