// SPDX-License-Identifier: Apache-2.0
/*
 * Unwinding workload in C++ with exceptions, built with -O2 -fomit-frame-pointer:
 * main -> run -> g1 -> ... -> g22 -> spin (hot). Every 64th call g22 throws, and g11 catches, so
 * the binary's CFI carries personality routines and landing pads, and the unwinder sees stacks
 * through frames with cleanups (each g has a destructor-bearing local).
 * Usage: deep-cxx SECONDS
 */
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

#define NOINLINE __attribute__((noinline, noclone))

static volatile unsigned long sink;

struct Guard {
	unsigned long *p;
	~Guard() { sink = sink + (*p & 1); }
};

NOINLINE unsigned long spin(unsigned long v);
NOINLINE unsigned long spin(unsigned long v)
{
	for (int i = 0; i < 9000; i++)
		v = v * 6364136223846793005UL + 1442695040888963407UL;
	return v;
}

NOINLINE unsigned long g22(unsigned long v);
NOINLINE unsigned long g22(unsigned long v)
{
	Guard g{&v};
	unsigned long r = spin(v);

	if ((v & 63) == 0)
		throw std::runtime_error("every 64th");
	return r ^ v;
}

NOINLINE unsigned long g21(unsigned long v);
NOINLINE unsigned long g21(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g22(v + 21);

	return r * 43UL;
}

NOINLINE unsigned long g20(unsigned long v);
NOINLINE unsigned long g20(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g21(v + 20);

	return r * 41UL;
}

NOINLINE unsigned long g19(unsigned long v);
NOINLINE unsigned long g19(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g20(v + 19);

	return r * 39UL;
}

NOINLINE unsigned long g18(unsigned long v);
NOINLINE unsigned long g18(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g19(v + 18);

	return r * 37UL;
}

NOINLINE unsigned long g17(unsigned long v);
NOINLINE unsigned long g17(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g18(v + 17);

	return r * 35UL;
}

NOINLINE unsigned long g16(unsigned long v);
NOINLINE unsigned long g16(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g17(v + 16);

	return r * 33UL;
}

NOINLINE unsigned long g15(unsigned long v);
NOINLINE unsigned long g15(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g16(v + 15);

	return r * 31UL;
}

NOINLINE unsigned long g14(unsigned long v);
NOINLINE unsigned long g14(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g15(v + 14);

	return r * 29UL;
}

NOINLINE unsigned long g13(unsigned long v);
NOINLINE unsigned long g13(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g14(v + 13);

	return r * 27UL;
}

NOINLINE unsigned long g12(unsigned long v);
NOINLINE unsigned long g12(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g13(v + 12);

	return r * 25UL;
}

NOINLINE unsigned long g11(unsigned long v);
NOINLINE unsigned long g11(unsigned long v)
{
	Guard g{&v};

	try {
		return g12(v + 11) * 23UL;
	} catch (const std::runtime_error &e) {
		return v + std::string(e.what()).size();
	}
}

NOINLINE unsigned long g10(unsigned long v);
NOINLINE unsigned long g10(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g11(v + 10);

	return r * 21UL;
}

NOINLINE unsigned long g9(unsigned long v);
NOINLINE unsigned long g9(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g10(v + 9);

	return r * 19UL;
}

NOINLINE unsigned long g8(unsigned long v);
NOINLINE unsigned long g8(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g9(v + 8);

	return r * 17UL;
}

NOINLINE unsigned long g7(unsigned long v);
NOINLINE unsigned long g7(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g8(v + 7);

	return r * 15UL;
}

NOINLINE unsigned long g6(unsigned long v);
NOINLINE unsigned long g6(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g7(v + 6);

	return r * 13UL;
}

NOINLINE unsigned long g5(unsigned long v);
NOINLINE unsigned long g5(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g6(v + 5);

	return r * 11UL;
}

NOINLINE unsigned long g4(unsigned long v);
NOINLINE unsigned long g4(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g5(v + 4);

	return r * 9UL;
}

NOINLINE unsigned long g3(unsigned long v);
NOINLINE unsigned long g3(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g4(v + 3);

	return r * 7UL;
}

NOINLINE unsigned long g2(unsigned long v);
NOINLINE unsigned long g2(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g3(v + 2);

	return r * 5UL;
}

NOINLINE unsigned long g1(unsigned long v);
NOINLINE unsigned long g1(unsigned long v)
{
	Guard g{&v};
	unsigned long r = g2(v + 1);

	return r * 3UL;
}

NOINLINE static void run(double seconds)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
	unsigned long v = 1;

	while (std::chrono::steady_clock::now() < end)
		v = g1(v) + 1;
	sink = v;
}

int main(int argc, char **argv)
{
	run(argc > 1 ? std::atof(argv[1]) : 10);
	return 0;
}
