// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "htlhash.h"

static void hex(const unsigned char *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_sha256_vectors(void **state)
{
	struct sym_sha256 h;
	unsigned char d[32];
	char out[65];
	const char *million_a = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
	char block[1000];

	sym_sha256_init(&h);
	sym_sha256_final(&h, d);
	hex(d, 32, out);
	assert_string_equal(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sym_sha256_init(&h);
	sym_sha256_update(&h, "abc", 3);
	sym_sha256_final(&h, d);
	hex(d, 32, out);
	assert_string_equal(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sym_sha256_init(&h);
	sym_sha256_update(&h, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56);
	sym_sha256_final(&h, d);
	hex(d, 32, out);
	assert_string_equal(out, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(block, 'a', sizeof(block));
	sym_sha256_init(&h);
	for (int i = 0; i < 1000; i++)
		sym_sha256_update(&h, block, sizeof(block));
	sym_sha256_final(&h, d);
	hex(d, 32, out);
	assert_string_equal(out, million_a);
}

/* htlhash by the definition, computed the long way: sha256(head || tail || be64(size))[:16] */
static void reference(const unsigned char *data, size_t size, char out[33])
{
	struct sym_sha256 h;
	unsigned char d[32], be[8];
	size_t n = size < 4096 ? size : 4096;

	sym_sha256_init(&h);
	sym_sha256_update(&h, data, n);
	sym_sha256_update(&h, data + size - n, n);
	for (int i = 0; i < 8; i++)
		be[i] = (unsigned char)((uint64_t)size >> (56 - 8 * i));
	sym_sha256_update(&h, be, 8);
	sym_sha256_final(&h, d);
	hex(d, 16, out);
}

static void test_htlhash_sizes(void **state)
{
	static const size_t sizes[] = { 0, 1, 100, 4095, 4096, 4097, 8192, 100000 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		unsigned char *data = malloc(n + 1);
		char want[33], got[33];
		int fd = memfd_create("htl", 0);

		for (size_t j = 0; j < n; j++)
			data[j] = (unsigned char)(j * 7 + 3);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, data, n), (ssize_t)n);
		reference(data, n, want);
		assert_int_equal(sym_htlhash_fd(fd, got), 0);
		assert_int_equal(strlen(got), SYM_HTLHASH_HEX_LEN);
		assert_string_equal(got, want);
		close(fd);
		free(data);
	}
}

static void test_htlhash_not_regular(void **state)
{
	int p[2];
	char out[33];

	assert_int_equal(pipe(p), 0);
	assert_int_equal(sym_htlhash_fd(p[0], out), -EINVAL);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_vectors),
		cmocka_unit_test(test_htlhash_sizes),
		cmocka_unit_test(test_htlhash_not_regular),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
