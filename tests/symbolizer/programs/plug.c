// SPDX-License-Identifier: Apache-2.0
/* Test shared library loaded with dlopen: plug_run returns a return address inside itself. */
__attribute__((noinline)) void *plug_here(void)
{
	void *r = __builtin_return_address(0);

	__asm__ volatile("" ::: "memory");
	return r;
}

void *plug_run(void)
{
	void *r = plug_here(); /* @PLUG */

	__asm__ volatile("" ::: "memory");
	return r;
}
