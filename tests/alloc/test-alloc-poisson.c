// SPDX-License-Identifier: Apache-2.0
/* The allocation sampler's statistics (alloc/poisson.h): its own log and exp, the exponential draws'
 * mean and spread, and the weights' unbiasedness over a simulated program's allocations. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "poisson.h"

static void test_log_exp(void **state)
{
	static const double xs[] = { 1e-300, 1e-9, 0.001, 0.3, 0.5, 0.70710678, 0.9999, 1, 1.5, 2, 3, 1e6, 1e300 };

	(void)state;
	for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++)
		assert_true(fabs(alloc_log(xs[i]) - log(xs[i])) <= 1e-12 * fmax(1, fabs(log(xs[i]))));
	for (double x = 0; x > -60; x -= 0.37)
		assert_true(fabs(alloc_exp_neg(x) - exp(x)) <= 1e-12 * exp(x));
	assert_true(alloc_exp_neg(-800) == 0);
	assert_true(alloc_exp_neg(3) == 1); /* positive arguments are clamped to 0 */
}

static void test_uniform(void **state)
{
	struct alloc_rng r;
	double sum = 0, min = 1, max = 0;
	const int n = 1000000;

	(void)state;
	alloc_rng_seed(&r, 0);
	for (int i = 0; i < n; i++) {
		double u = alloc_rng_uniform(&r);

		assert_true(u > 0 && u <= 1);
		sum += u;
		min = fmin(min, u);
		max = fmax(max, u);
	}
	assert_true(fabs(sum / n - 0.5) < 0.002);
	assert_true(min < 1e-4 && max > 1 - 1e-4);
}

/* Exponential draws: mean and standard deviation both the mean (within 1% over a million draws),
 * and the memoryless tail: P(X > 2m) = e^-2. */
static void test_exponential(void **state)
{
	struct alloc_rng r;
	const uint64_t mean = 512 * 1024;
	const int n = 1000000;
	double sum = 0, sum2 = 0;
	int beyond = 0;

	(void)state;
	alloc_rng_seed(&r, 42);
	for (int i = 0; i < n; i++) {
		double x = (double)alloc_poisson_next(&r, mean);

		sum += x;
		sum2 += x * x;
		beyond += x > 2.0 * mean;
	}
	assert_true(fabs(sum / n / mean - 1) < 0.01);
	assert_true(fabs(sqrt(sum2 / n - (sum / n) * (sum / n)) / mean - 1) < 0.01);
	assert_true(fabs((double)beyond / n - exp(-2)) < 0.002);
	assert_int_equal(alloc_poisson_next(&r, 0), 1);
}

static void test_weight(void **state)
{
	(void)state;
	assert_int_equal(alloc_weight(0, 1024), alloc_weight(1, 1024));
	assert_int_equal(alloc_weight(100, 0), 100);
	/* Small allocations weigh about the mean (plus half their size); huge ones their size. */
	assert_true(llabs((long long)alloc_weight(16, 524288) - (524288 + 8)) <= 1);
	assert_int_equal(alloc_weight(1ULL << 40, 524288), 1ULL << 40);
	assert_true(fabs((double)alloc_weight(524288, 524288) - 524288 / (1 - exp(-1))) < 1);
}

/*
 * The sampler as the library runs it, over a simulated program: allocations of mixed sizes (16 B to
 * 1 MiB), a thread-local counter of bytes to the next sampled byte. The sampled weights estimate the
 * bytes of each size class within a few percent, and of the whole within 1%.
 */
static void test_unbiased(void **state)
{
	static const uint64_t sizes[] = { 16, 48, 200, 4096, 65536, 1 << 20 };
	enum { CLASSES = sizeof(sizes) / sizeof(sizes[0]) };
	const uint64_t mean = 16 * 1024;
	double estimate[CLASSES] = { 0 }, truth[CLASSES] = { 0 }, all_estimate = 0, all_truth = 0;
	struct alloc_rng r, pick;
	int64_t left;

	(void)state;
	alloc_rng_seed(&r, 7);
	alloc_rng_seed(&pick, 8);
	left = (int64_t)alloc_poisson_next(&r, mean);
	for (int i = 0; i < 4000000; i++) {
		int c = (int)(alloc_rng_uniform(&pick) * CLASSES * 0.9999);
		uint64_t size = sizes[c] + (uint64_t)(alloc_rng_uniform(&pick) * 16);

		/* the big ones rarely, as programs do */
		if (c == CLASSES - 1 && alloc_rng_uniform(&pick) > 0.01)
			continue;
		truth[c] += (double)size;
		left -= (int64_t)size;
		if (left > 0)
			continue;
		left = (int64_t)alloc_poisson_next(&r, mean);
		estimate[c] += (double)alloc_weight(size, mean);
	}
	for (int c = 0; c < CLASSES; c++) {
		print_message("size %6lu: estimate/truth %.4f\n", (unsigned long)sizes[c], estimate[c] / truth[c]);
		assert_true(fabs(estimate[c] / truth[c] - 1) < 0.05);
		all_estimate += estimate[c];
		all_truth += truth[c];
	}
	assert_true(fabs(all_estimate / all_truth - 1) < 0.01);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_exp),
		cmocka_unit_test(test_uniform),
		cmocka_unit_test(test_exponential),
		cmocka_unit_test(test_weight),
		cmocka_unit_test(test_unbiased),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
