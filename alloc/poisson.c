// SPDX-License-Identifier: Apache-2.0
#include "poisson.h"

#include <string.h>

#define LN2 0.693147180559945309417232121458

void alloc_rng_seed(struct alloc_rng *r, uint64_t seed)
{
	/* splitmix64 of the seed: nearby seeds (thread ids, times) give unrelated streams. */
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	r->s = z ? z : 0x2545f4914f6cdd1dULL;
}

double alloc_rng_uniform(struct alloc_rng *r)
{
	uint64_t x = r->s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->s = x;
	/* 53 random bits, plus one: (0, 2^53] / 2^53. */
	return (double)(((x * 0x2545f4914f6cdd1dULL) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

double alloc_log(double x)
{
	uint64_t bits;
	int exponent;
	double m, s, s2, term, sum;

	if (!(x > 0))
		return -1e308;
	memcpy(&bits, &x, sizeof(bits));
	exponent = (int)((bits >> 52) & 0x7ff) - 1023;
	if (exponent == -1023) /* subnormal: scale into the normal range first */
		return alloc_log(x * 18014398509481984.0) - 54 * LN2;
	bits = (bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
	memcpy(&m, &bits, sizeof(m)); /* x = m * 2^exponent, m in [1, 2) */
	if (m > 1.41421356237309504880) { /* keep m within [sqrt(1/2), sqrt(2)): the series converges fast */
		m /= 2;
		exponent++;
	}
	/* ln(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172 */
	s = (m - 1) / (m + 1);
	s2 = s * s;
	term = s;
	sum = 0;
	for (int k = 1; k < 30; k += 2) {
		sum += term / k;
		term *= s2;
	}
	return 2 * sum + exponent * LN2;
}

double alloc_exp_neg(double x)
{
	double r, term, sum;
	int k;

	if (x > 0)
		x = 0;
	if (x < -700)
		return 0;
	/* exp(x) = 2^k exp(r), r = x - k ln2 in (-ln2, 0] */
	k = (int)(x / LN2);
	r = x - k * LN2;
	term = 1;
	sum = 1;
	for (int i = 1; i < 25; i++) {
		term *= r / i;
		sum += term;
	}
	for (; k < 0; k++)
		sum *= 0.5;
	return sum;
}

uint64_t alloc_poisson_next(struct alloc_rng *r, uint64_t mean)
{
	double d = -alloc_log(alloc_rng_uniform(r)) * (double)mean;

	if (d < 1)
		return 1;
	if (d > 1e18)
		return (uint64_t)1e18;
	return (uint64_t)d;
}

uint64_t alloc_weight(uint64_t size, uint64_t mean)
{
	double x, p;

	if (!size)
		size = 1;
	if (!mean)
		return size;
	x = (double)size / (double)mean;
	/* 1 - exp(-x) loses its digits for small x: the series instead. */
	p = x < 1e-4 ? x * (1 - x / 2 + x * x / 6) : 1 - alloc_exp_neg(-x);
	if (p >= 1)
		return size;
	return (uint64_t)((double)size / p + 0.5);
}
