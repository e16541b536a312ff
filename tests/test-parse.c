// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "parse.h"

static void test_port(void **state)
{
	static const char *const bad[] = { "", "0", "65536", "99999", "123456", "+80", "-1", " 80", "80 ", "0x50", "8a" };
	unsigned port;

	(void)state;
	assert_int_equal(parse_port("1", 1, &port), 0);
	assert_int_equal(port, 1);
	assert_int_equal(parse_port("65535", 5, &port), 0);
	assert_int_equal(port, 65535);
	assert_int_equal(parse_port("4317/x", 4, &port), 0); /* only len bytes are read */
	assert_int_equal(port, 4317);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse_port(bad[i], strlen(bad[i]), &port), -EINVAL);
}

static void test_host_port(void **state)
{
	static const struct {
		const char *text, *host;
		unsigned port;
		bool port_required;
	} good[] = {
		{ "127.0.0.1:9464", "127.0.0.1", 9464, true }, { "[::1]:1", "::1", 1, true },
		{ "[::]:9464", "::", 9464, true }, { "localhost:80", "localhost", 80, true },
		{ "a-b.example.com.:4317", "a-b.example.com.", 4317, true }, { "collector", "collector", 0, false },
		{ "[fe80::1]", "fe80::1", 0, false }, { "1.2.3.4", "1.2.3.4", 0, false },
	};
	static const char *const bad[] = {
		"::::", "::1:4317", "[::1", "[::1]x", "[::1]:", "[zz]:1", ":80", "", "host", "host:", "host:0",
		"host:65536", "ho_st:1", "-host:1", "host-:1", "a..b:1", ".a:1", "300.1.1.1:1", "1.2.3:1",
		"user@host:1", "h st:1", "h\r\n:1",
	};
	char host[64];
	unsigned port;
	const char *why;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		print_message("%s\n", good[i].text);
		assert_int_equal(parse_host_port(good[i].text, strlen(good[i].text), good[i].port_required, host,
						 sizeof(host), &port, &why), 0);
		assert_string_equal(host, good[i].host);
		assert_int_equal(port, good[i].port);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		print_message("%s\n", bad[i]);
		assert_int_equal(parse_host_port(bad[i], strlen(bad[i]), true, host, sizeof(host), &port, &why), -EINVAL);
		assert_non_null(why);
	}
	/* A label of 64 bytes, a host longer than the buffer. */
	assert_int_equal(parse_host_port("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:1", 66, true, host,
					 sizeof(host), &port, &why), -EINVAL);
	assert_int_equal(parse_host_port("abcdefgh:1", 10, true, host, 8, &port, &why), -EINVAL);
}

static void test_escape(void **state)
{
	char buf[16];

	(void)state;
	assert_false(parse_has_control("caf\xc3\xa9 ok"));
	assert_true(parse_has_control("a\tb"));
	assert_true(parse_has_control("\x7f"));
	assert_string_equal(parse_escape("a\r\nb\x1b", buf, sizeof(buf)), "a\\x0d\\x0ab\\x1b");
	assert_string_equal(parse_escape("0123456789abcdefghij", buf, sizeof(buf)), "0123456789ab...");
	assert_string_equal(parse_escape("\n\n\n\n", buf, sizeof(buf)), "\\x0a\\x0a\\x0a...");
	assert_string_equal(parse_escape("x", buf, 3), "");
}

static void test_redact_url(void **state)
{
	char buf[128];

	(void)state;
	assert_string_equal(parse_redact_url("https://user:pw@c:4318/v1", buf, sizeof(buf)), "https://***@c:4318/v1");
	assert_string_equal(parse_redact_url("u:p@ss/w@c:4317", buf, sizeof(buf)), "***@c:4317");
	assert_string_equal(parse_redact_url("https://c/p?api_key=secret", buf, sizeof(buf)), "https://c/p?***");
	assert_string_equal(parse_redact_url("http://c:1/x\r\n", buf, sizeof(buf)), "http://c:1/x\\x0d\\x0a");
	assert_string_equal(parse_redact_url("collector:4317", buf, sizeof(buf)), "collector:4317");
	assert_string_equal(parse_redact_url("https://user:pw@c:4318/v1", buf, 12), "https://...");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_port),
		cmocka_unit_test(test_host_port),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_redact_url),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
