// SPDX-License-Identifier: Apache-2.0
/*
 * A short-lived program: burns BURN_MS (default 30) in brief_burn() under brief_middle() and
 * brief_outer(), then exits. Started in a loop, its processes are gone before a loop that lags
 * behind its ring buffer handles their samples (the kernel's mmap events name them still).
 */
#include <stdlib.h>

#include "burn.h"

static volatile uint64_t sink;

DEFINE_BURN(brief_burn)

uint64_t __attribute__((noinline)) brief_middle(uint64_t ms)
{
	return brief_burn(ms) + 1;
}

uint64_t __attribute__((noinline)) brief_outer(uint64_t ms)
{
	return brief_middle(ms) + 1;
}

int main(int argc, char **argv)
{
	sink = brief_outer(argc > 1 ? strtoull(argv[1], NULL, 10) : 30);
	return 0;
}
