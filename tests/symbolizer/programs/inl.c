// SPDX-License-Identifier: Apache-2.0
/* Test program: an inline chain inner -> outer -> main around a call whose return address it
 * prints, and optionally a dlopen'ed library. Lines marked @NAME are looked up by the test. */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

void *volatile captured;

__attribute__((noinline)) void leaf(void) /* @LEAF */
{
	captured = __builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) void inner(void)
{
	leaf(); /* @INNER */
	__asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) void outer(void)
{
	inner(); /* @OUTER */
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	outer(); /* @MAIN */
	printf("leaf %p\nret %p\n", (void *)leaf, captured);
	if (argc > 1) {
		void *lib = dlopen(argv[1], RTLD_NOW);
		void *(*run)(void) = lib ? (void *(*)(void))dlsym(lib, "plug_run") : NULL;

		if (!run) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
		printf("plug %p\n", run());
	}
	printf("ready\n");
	fflush(stdout);
	pause();
	return 0;
}
