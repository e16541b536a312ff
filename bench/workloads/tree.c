// SPDX-License-Identifier: Apache-2.0
/*
 * An allocation-heavy benchmark (bench/alloc/run.py): builds binary trees of small nodes (48 bytes,
 * malloc'ed one by one), walks them and frees them, ROUNDS times, keeping one long-lived tree of each
 * tenth round until the end (some live heap). Prints the work's wall time and its own CPU time (user +
 * system, which holds the time of any uprobe that fires in it) in seconds, the allocations and a
 * checksum. With "wait", it reads a line from standard input first (a tracer attaches meanwhile).
 * Usage: tree DEPTH ROUNDS [wait]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

struct node {
	struct node *left, *right;
	uint64_t value[4];
};

static uint64_t allocations;

static struct node *__attribute__((noinline)) build(int depth, uint64_t seed)
{
	struct node *n = malloc(sizeof(*n));

	if (!n)
		abort();
	allocations++;
	n->value[0] = seed;
	n->left = depth ? build(depth - 1, seed * 2) : NULL;
	n->right = depth ? build(depth - 1, seed * 2 + 1) : NULL;
	return n;
}

static uint64_t __attribute__((noinline)) walk(const struct node *n)
{
	return n ? n->value[0] + walk(n->left) + walk(n->right) : 0;
}

static void __attribute__((noinline)) release(struct node *n)
{
	if (!n)
		return;
	release(n->left);
	release(n->right);
	free(n);
}

static double cpu_seconds(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 16, rounds = argc > 2 ? atoi(argv[2]) : 100;
	struct node **kept = calloc((size_t)rounds / 10 + 1, sizeof(*kept));
	struct timespec a, b;
	uint64_t sum = 0;
	double cpu;

	if (argc > 3 && !strcmp(argv[3], "wait")) {
		char line[16];

		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	cpu = cpu_seconds();
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int r = 0; r < rounds; r++) {
		struct node *t = build(depth, (uint64_t)r);

		sum += walk(t);
		if (r % 10 == 0)
			kept[r / 10] = t;
		else
			release(t);
	}
	for (int r = 0; r < rounds; r += 10)
		release(kept[r / 10]);
	clock_gettime(CLOCK_MONOTONIC, &b);
	cpu = cpu_seconds() - cpu;
	printf("%.6f %llu %llu %.6f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9,
	       (unsigned long long)allocations, (unsigned long long)(sum & 0xff), cpu);
	free(kept);
	return 0;
}
