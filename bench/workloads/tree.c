// SPDX-License-Identifier: Apache-2.0
/*
 * An allocation-heavy benchmark (bench/alloc/run.py): builds binary trees of small nodes (48 bytes,
 * malloc'ed one by one), walks them and frees them, ROUNDS times, keeping one long-lived tree of each
 * tenth round until the end (some live heap). Prints the wall time in seconds and the allocations.
 * Usage: tree DEPTH ROUNDS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 16, rounds = argc > 2 ? atoi(argv[2]) : 100;
	struct node **kept = calloc((size_t)rounds / 10 + 1, sizeof(*kept));
	struct timespec a, b;
	uint64_t sum = 0;

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
	printf("%.6f %llu %llu\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9,
	       (unsigned long long)allocations, (unsigned long long)(sum & 0xff));
	free(kept);
	return 0;
}
