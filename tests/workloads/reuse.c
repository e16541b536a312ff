// SPDX-License-Identifier: Apache-2.0
/*
 * Built twice, as reuse-x (HOT=reuse_x_hot) and reuse-y (HOT=reuse_y_hot), non-PIE: the two
 * programs load at the same addresses and differ only in the name of their hot function, so a
 * profile that symbolized one's samples with the other's mappings would name the wrong function.
 * reuse-? MS [PROGRAM ARGS...]: burn MS of CPU in HOT(), then exec PROGRAM when given.
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "burn.h"

#ifndef HOT
#define HOT reuse_x_hot
#endif

static volatile uint64_t sink;

DEFINE_BURN(HOT)

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	sink = HOT(strtoull(argv[1], NULL, 10));
	if (argc > 2)
		execv(argv[2], argv + 2);
	return 0;
}
