/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The allocation sampler's statistics: a Poisson process over allocated bytes. The distance to the
 * next sampled byte is drawn from an exponential distribution of mean `mean` bytes; an allocation
 * holding at least one sampled byte is sampled, which happens with probability 1 - exp(-size / mean),
 * so its unbiased byte estimate (weight) is size / (1 - exp(-size / mean)).
 *
 * No libm, no allocation, no global state: the generator's state belongs to the caller (one per
 * thread in libotelprofd-alloc.so), so this is safe anywhere, the loader's early calls included.
 */
#ifndef OTELPROFD_ALLOC_POISSON_H
#define OTELPROFD_ALLOC_POISSON_H

#include <stdint.h>

/* The mean when OTELPROFD_ALLOC_SAMPLE is not set: 512 KiB, as ddprof and Go's heap profiler. */
#define ALLOC_DEFAULT_MEAN (512u * 1024u)

/* xorshift64* state; never 0 (alloc_rng_seed() makes sure). */
struct alloc_rng {
	uint64_t s;
};

void alloc_rng_seed(struct alloc_rng *r, uint64_t seed);
/* Uniform in (0, 1]: never 0, so its logarithm is finite. */
double alloc_rng_uniform(struct alloc_rng *r);

/* Natural logarithm of x > 0, and exp(x) for x <= 0, accurate to about 1e-12 relative. */
double alloc_log(double x);
double alloc_exp_neg(double x);

/* Bytes until the next sampled byte: exponential with this mean, at least 1. */
uint64_t alloc_poisson_next(struct alloc_rng *r, uint64_t mean);
/* The unbiased byte estimate of a sampled allocation of size bytes (>= size; size 0 counts as 1). */
uint64_t alloc_weight(uint64_t size, uint64_t mean);

#endif
