// SPDX-License-Identifier: Apache-2.0
#include "sort_u64.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Under this many records a comparison sort is as quick. */
#define RADIX_MIN 256

static _Thread_local size_t key_at; /* by_key()'s: qsort() takes no context */

static uint64_t key_of(const unsigned char *record, size_t offset)
{
	uint64_t k;

	memcpy(&k, record + offset, sizeof(k));
	return k;
}

static int by_key(const void *a, const void *b)
{
	uint64_t x = key_of(a, key_at), y = key_of(b, key_at);

	return x < y ? -1 : x > y;
}

void sort_u64(void *base, size_t n, size_t size, size_t key_offset)
{
	size_t (*counts)[256] = NULL;
	unsigned char *src = base, *dst = NULL;

	if (n >= RADIX_MIN) {
		dst = malloc(n * size);
		counts = calloc(8, sizeof(*counts));
	}
	if (!dst || !counts) {
		free(dst);
		free(counts);
		key_at = key_offset;
		qsort(base, n, size, by_key);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t k = key_of(src + i * size, key_offset);

		for (unsigned d = 0; d < 8; d++)
			counts[d][(k >> (8 * d)) & 0xff]++;
	}
	for (unsigned d = 0; d < 8; d++) {
		unsigned char *swap;
		size_t at = 0;

		if (counts[d][(key_of(src, key_offset) >> (8 * d)) & 0xff] == n)
			continue; /* every key has this byte: the pass would move nothing */
		for (unsigned b = 0; b < 256; b++) {
			size_t c = counts[d][b];

			counts[d][b] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++) {
			const unsigned char *r = src + i * size;

			memcpy(dst + counts[d][(key_of(r, key_offset) >> (8 * d)) & 0xff]++ * size, r, size);
		}
		swap = src;
		src = dst;
		dst = swap;
	}
	if (src != base) {
		memcpy(base, src, n * size);
		dst = src;
	}
	free(dst);
	free(counts);
}
