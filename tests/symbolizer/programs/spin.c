// SPDX-License-Identifier: Apache-2.0
/* Test program: burns the CPU in bomb_spin() for argv[1] seconds (default 5). The tests add
 * decompression bombs to its sections (gen-bomb.py) and profile it. */
#include <stdlib.h>

#include "../../workloads/burn.h"

DEFINE_BURN(bomb_spin)

int main(int argc, char **argv)
{
	return (int)(bomb_spin(1000ULL * (uint64_t)(argc > 1 ? atoi(argv[1]) : 5)) & 1);
}
