// SPDX-License-Identifier: Apache-2.0
/*
 * Victim and attacker of the build-id poisoning tests: one source built twice with one build id.
 * The attacker build (-DATTACKER) names the hot function INJECTED_BY_ATTACKER; its code, and so its
 * address, is the victim's. Prints "hot ADDR" and "ready", then spins for argv[1] seconds (default:
 * until killed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef ATTACKER
#define victim_hot INJECTED_BY_ATTACKER
#endif

unsigned long victim_hot(unsigned long n);

__attribute__((noinline)) unsigned long victim_hot(unsigned long n)
{
	volatile unsigned long x = 0;

	for (unsigned long i = 0; i < n; i++)
		x += i * 7;
	return x;
}

int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atol(argv[1]) : 1000000);

	printf("hot %p\nready\n", (void *)victim_hot);
	fflush(stdout);
	while (time(NULL) < end)
		victim_hot(1000000);
	return 0;
}
