// SPDX-License-Identifier: Apache-2.0
#include "htlhash.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HTL_CHUNK 4096

static const uint32_t k256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static void compress(struct sym_sha256 *h, const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, hh;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = h->state[0], b = h->state[1], c = h->state[2], d = h->state[3];
	e = h->state[4], f = h->state[5], g = h->state[6], hh = h->state[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + k256[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));

		hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	h->state[0] += a, h->state[1] += b, h->state[2] += c, h->state[3] += d;
	h->state[4] += e, h->state[5] += f, h->state[6] += g, h->state[7] += hh;
}

void sym_sha256_init(struct sym_sha256 *h)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(h->state, iv, sizeof(iv));
	h->length = 0;
	h->used = 0;
}

void sym_sha256_update(struct sym_sha256 *h, const void *data, size_t len)
{
	const unsigned char *p = data;

	h->length += len;
	while (len) {
		size_t n = sizeof(h->block) - h->used;

		if (n > len)
			n = len;
		memcpy(h->block + h->used, p, n);
		h->used += n;
		p += n;
		len -= n;
		if (h->used == sizeof(h->block)) {
			compress(h, h->block);
			h->used = 0;
		}
	}
}

void sym_sha256_final(struct sym_sha256 *h, unsigned char digest[32])
{
	uint64_t bits = h->length * 8;
	unsigned char pad[72] = { 0x80 };
	size_t padlen = (h->used < 56 ? 56 : 120) - h->used;

	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
	sym_sha256_update(h, pad, padlen + 8);
	for (int i = 0; i < 8; i++) {
		digest[4 * i] = (unsigned char)(h->state[i] >> 24);
		digest[4 * i + 1] = (unsigned char)(h->state[i] >> 16);
		digest[4 * i + 2] = (unsigned char)(h->state[i] >> 8);
		digest[4 * i + 3] = (unsigned char)h->state[i];
	}
}

/* Read exactly len bytes at offset, or fail: a file that shrinks under us is not hashed. */
static int read_at(int fd, unsigned char *buf, size_t len, off_t offset)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
		offset += n;
	}
	return 0;
}

int sym_htlhash_fd(int fd, char hex[SYM_HTLHASH_HEX_LEN + 1])
{
	unsigned char buf[HTL_CHUNK], digest[32], be[8];
	struct sym_sha256 h;
	struct stat st;
	uint64_t size;
	size_t n;
	int r;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	size = (uint64_t)st.st_size;
	sym_sha256_init(&h);
	n = size < HTL_CHUNK ? (size_t)size : HTL_CHUNK;
	r = read_at(fd, buf, n, 0);
	if (r)
		return r;
	sym_sha256_update(&h, buf, n);
	r = read_at(fd, buf, n, (off_t)(size - n));
	if (r)
		return r;
	sym_sha256_update(&h, buf, n);
	for (int i = 0; i < 8; i++)
		be[i] = (unsigned char)(size >> (56 - 8 * i));
	sym_sha256_update(&h, be, sizeof(be));
	sym_sha256_final(&h, digest);
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	return 0;
}
