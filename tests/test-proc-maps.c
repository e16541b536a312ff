// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "proc_maps.h"

static void test_parse(void **state)
{
	char line[] = "7f1c2a400000-7f1c2a5d5000 r-xp 00028000 fd:01 1312       /usr/lib/x86_64-linux-gnu/libc.so.6\n";
	char deleted[] = "55d0c0a00000-55d0c0a01000 r-xp 00001000 08:02 99 /tmp/my app (deleted)\n";
	char anon[] = "7ffd1c1b2000-7ffd1c1d3000 rw-p 00000000 00:00 0                          [stack]\n";
	struct proc_map m;

	assert_true(proc_map_parse_line(line, &m));
	assert_int_equal(m.start, 0x7f1c2a400000ULL);
	assert_int_equal(m.end, 0x7f1c2a5d5000ULL);
	assert_int_equal(m.offset, 0x28000);
	assert_int_equal(m.dev_major, 0xfd);
	assert_int_equal(m.dev_minor, 1);
	assert_int_equal(m.inode, 1312);
	assert_true(m.executable);
	assert_string_equal(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	assert_false(m.deleted);

	assert_true(proc_map_parse_line(deleted, &m));
	assert_string_equal(m.path, "/tmp/my app");
	assert_true(m.deleted);

	assert_true(proc_map_parse_line(anon, &m));
	assert_false(m.executable);
	assert_string_equal(m.path, "[stack]");
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"", "zzzz", "1000-", "2000-1000 r-xp 0 00:00 0", "1000-2000 r-x", "1000-2000 r-xp zz 00:00 0",
		"1000-2000 r-xp 0 00 0", "1000-2000 r-xp 0 00:00 x",
	};
	struct proc_map m;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char buf[128];

		strcpy(buf, bad[i]);
		assert_false(proc_map_parse_line(buf, &m));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
