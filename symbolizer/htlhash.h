/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File identities for the OTLP mapping attributes: the htlhash (SHA-256 over the first 4096 bytes,
 * the last 4096 bytes and the length as a big-endian uint64, truncated to 16 bytes) and SHA-256.
 */
#ifndef OTELPROF_HTLHASH_H
#define OTELPROF_HTLHASH_H

#include <stddef.h>
#include <stdint.h>

#define SYM_HTLHASH_HEX_LEN 32

struct sym_sha256 {
	uint32_t state[8];
	uint64_t length;       /* bytes hashed so far */
	unsigned char block[64];
	size_t used;           /* bytes in block */
};

void sym_sha256_init(struct sym_sha256 *h);
void sym_sha256_update(struct sym_sha256 *h, const void *data, size_t len);
void sym_sha256_final(struct sym_sha256 *h, unsigned char digest[32]);

/* htlhash of the open file fd (read with pread, offset untouched) as 32 hex characters plus NUL
 * into hex. 0 or -errno. */
int sym_htlhash_fd(int fd, char hex[SYM_HTLHASH_HEX_LEN + 1]);

#endif
