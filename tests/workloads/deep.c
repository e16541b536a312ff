// SPDX-License-Identifier: Apache-2.0
/*
 * Unwinding workload, built with -O2 -fomit-frame-pointer: main -> run -> f1 -> ... -> f24 -> leaf,
 * where leaf is hot_x (about 70% of the time) or hot_y (30%). Every function is a real frame (not
 * inlined, no tail call: each uses its callee's result). With "recurse" as the second argument it
 * recurses through frames of 1 KiB each, 200 deep (or DEPTH), far past any copied stack window.
 * Also built with frame pointers (deep-fp), where a recursion of 60 still fits the kernel's
 * frame-pointer walk (127 frames) but not the window.
 * Usage: deep SECONDS [recurse [DEPTH]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline, noclone))

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE unsigned long hot_x(unsigned long v);
NOINLINE unsigned long hot_x(unsigned long v)
{
	for (int i = 0; i < 7000; i++)
		v = v * 6364136223846793005UL + 1442695040888963407UL;
	return v;
}

NOINLINE unsigned long hot_y(unsigned long v);
NOINLINE unsigned long hot_y(unsigned long v)
{
	for (int i = 0; i < 3000; i++)
		v = (v ^ (v >> 7)) * 0x9e3779b97f4a7c15UL;
	return v;
}

NOINLINE unsigned long f24(unsigned long v);
NOINLINE unsigned long f24(unsigned long v)
{
	unsigned long r = hot_x(v) + hot_y(v + 1);

	sink = r;
	return r ^ v;
}

NOINLINE unsigned long f23(unsigned long v);
NOINLINE unsigned long f23(unsigned long v)
{
	unsigned long r = f24(v + 23);

	sink = r;
	return r * 47UL;
}

NOINLINE unsigned long f22(unsigned long v);
NOINLINE unsigned long f22(unsigned long v)
{
	unsigned long r = f23(v + 22);

	sink = r;
	return r * 45UL;
}

NOINLINE unsigned long f21(unsigned long v);
NOINLINE unsigned long f21(unsigned long v)
{
	unsigned long r = f22(v + 21);

	sink = r;
	return r * 43UL;
}

NOINLINE unsigned long f20(unsigned long v);
NOINLINE unsigned long f20(unsigned long v)
{
	unsigned long r = f21(v + 20);

	sink = r;
	return r * 41UL;
}

NOINLINE unsigned long f19(unsigned long v);
NOINLINE unsigned long f19(unsigned long v)
{
	unsigned long r = f20(v + 19);

	sink = r;
	return r * 39UL;
}

NOINLINE unsigned long f18(unsigned long v);
NOINLINE unsigned long f18(unsigned long v)
{
	unsigned long r = f19(v + 18);

	sink = r;
	return r * 37UL;
}

NOINLINE unsigned long f17(unsigned long v);
NOINLINE unsigned long f17(unsigned long v)
{
	unsigned long r = f18(v + 17);

	sink = r;
	return r * 35UL;
}

NOINLINE unsigned long f16(unsigned long v);
NOINLINE unsigned long f16(unsigned long v)
{
	unsigned long r = f17(v + 16);

	sink = r;
	return r * 33UL;
}

NOINLINE unsigned long f15(unsigned long v);
NOINLINE unsigned long f15(unsigned long v)
{
	unsigned long r = f16(v + 15);

	sink = r;
	return r * 31UL;
}

NOINLINE unsigned long f14(unsigned long v);
NOINLINE unsigned long f14(unsigned long v)
{
	unsigned long r = f15(v + 14);

	sink = r;
	return r * 29UL;
}

NOINLINE unsigned long f13(unsigned long v);
NOINLINE unsigned long f13(unsigned long v)
{
	unsigned long r = f14(v + 13);

	sink = r;
	return r * 27UL;
}

NOINLINE unsigned long f12(unsigned long v);
NOINLINE unsigned long f12(unsigned long v)
{
	unsigned long r = f13(v + 12);

	sink = r;
	return r * 25UL;
}

NOINLINE unsigned long f11(unsigned long v);
NOINLINE unsigned long f11(unsigned long v)
{
	unsigned long r = f12(v + 11);

	sink = r;
	return r * 23UL;
}

NOINLINE unsigned long f10(unsigned long v);
NOINLINE unsigned long f10(unsigned long v)
{
	unsigned long r = f11(v + 10);

	sink = r;
	return r * 21UL;
}

NOINLINE unsigned long f9(unsigned long v);
NOINLINE unsigned long f9(unsigned long v)
{
	unsigned long r = f10(v + 9);

	sink = r;
	return r * 19UL;
}

NOINLINE unsigned long f8(unsigned long v);
NOINLINE unsigned long f8(unsigned long v)
{
	unsigned long r = f9(v + 8);

	sink = r;
	return r * 17UL;
}

NOINLINE unsigned long f7(unsigned long v);
NOINLINE unsigned long f7(unsigned long v)
{
	unsigned long r = f8(v + 7);

	sink = r;
	return r * 15UL;
}

NOINLINE unsigned long f6(unsigned long v);
NOINLINE unsigned long f6(unsigned long v)
{
	unsigned long r = f7(v + 6);

	sink = r;
	return r * 13UL;
}

NOINLINE unsigned long f5(unsigned long v);
NOINLINE unsigned long f5(unsigned long v)
{
	unsigned long r = f6(v + 5);

	sink = r;
	return r * 11UL;
}

NOINLINE unsigned long f4(unsigned long v);
NOINLINE unsigned long f4(unsigned long v)
{
	unsigned long r = f5(v + 4);

	sink = r;
	return r * 9UL;
}

NOINLINE unsigned long f3(unsigned long v);
NOINLINE unsigned long f3(unsigned long v)
{
	unsigned long r = f4(v + 3);

	sink = r;
	return r * 7UL;
}

NOINLINE unsigned long f2(unsigned long v);
NOINLINE unsigned long f2(unsigned long v)
{
	unsigned long r = f3(v + 2);

	sink = r;
	return r * 5UL;
}

NOINLINE unsigned long f1(unsigned long v);
NOINLINE unsigned long f1(unsigned long v)
{
	unsigned long r = f2(v + 1);

	sink = r;
	return r * 3UL;
}

NOINLINE unsigned long recurse(unsigned depth, unsigned long v);
NOINLINE unsigned long recurse(unsigned depth, unsigned long v)
{
	volatile unsigned char frame[1024];
	unsigned long r;

	memset((void *)frame, (int)v, sizeof(frame));
	r = depth ? recurse(depth - 1, v + frame[depth % sizeof(frame)]) : hot_x(v);
	sink = r;
	return r + frame[v % sizeof(frame)];
}

NOINLINE static void run(double seconds, unsigned recursion)
{
	double end = now() + seconds;
	unsigned long v = 1;

	while (now() < end)
		v = recursion ? recurse(recursion, v) : f1(v);
	sink = v;
}

int main(int argc, char **argv)
{
	unsigned recursion = argc > 2 && !strcmp(argv[2], "recurse") ? 200 : 0;

	if (recursion && argc > 3)
		recursion = (unsigned)atoi(argv[3]);
	run(argc > 1 ? atof(argv[1]) : 10, recursion);
	return 0;
}
