// SPDX-License-Identifier: Apache-2.0
/* Test program: an inline chain 20 deep (more than SYM_MAX_INLINE) around a call whose return
 * address it prints: the symbolizer keeps the innermost frames and the outermost function, and
 * counts the cut in inline_truncated. */
#include <stdio.h>
#include <unistd.h>

void *volatile captured;

__attribute__((noinline)) void leaf(void)
{
	captured = __builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

#define LEVEL(n, next)                                                                   \
	static inline __attribute__((always_inline)) void d##n(void)                      \
	{                                                                                  \
		next();                                                                    \
		__asm__ volatile("" ::: "memory");                                         \
	}
LEVEL(0, leaf)
LEVEL(1, d0) LEVEL(2, d1) LEVEL(3, d2) LEVEL(4, d3) LEVEL(5, d4) LEVEL(6, d5) LEVEL(7, d6)
LEVEL(8, d7) LEVEL(9, d8) LEVEL(10, d9) LEVEL(11, d10) LEVEL(12, d11) LEVEL(13, d12)
LEVEL(14, d13) LEVEL(15, d14) LEVEL(16, d15) LEVEL(17, d16) LEVEL(18, d17) LEVEL(19, d18)

int main(void)
{
	d19();
	printf("leaf %p\nret %p\nready\n", (void *)leaf, captured);
	fflush(stdout);
	pause();
	return 0;
}
