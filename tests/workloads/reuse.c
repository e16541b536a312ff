/*
 * Built twice, as reuse-x (HOT=reuse_x_hot) and reuse-y (HOT=reuse_y_hot), non-PIE: the two
 * programs load at the same addresses and differ only in the name of their hot function, so a
 * profile that symbolized one's samples with the other's mappings would name the wrong function.
 * reuse-? MS [PROGRAM ARGS...]: burn MS of CPU in HOT(), then exec PROGRAM when given.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifndef HOT
#define HOT reuse_x_hot
#endif

static volatile uint64_t sink;
uint64_t HOT(uint64_t ms);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t __attribute__((noinline)) HOT(uint64_t ms)
{
	uint64_t end = now_ns() + ms * 1000000ULL, x = 1;

	while (now_ns() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	sink = HOT(strtoull(argv[1], NULL, 10));
	if (argc > 2)
		execv(argv[2], argv + 2);
	return 0;
}
