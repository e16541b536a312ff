// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "proc_maps.h"
#include "proc_maps_share.h"

#include <stdio.h>
#include <unistd.h>

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

static bool reads_text(FILE *f, const char *want)
{
	char buf[256] = { 0 };
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	return n == strlen(want) && !memcmp(buf, want, n);
}

/* A text offered for a program instance serves that pid's reads on the host's /proc inside a window
 * of the same instance and map count; for another pid, instance, map count or proc root, outside a
 * window, or once freed, the file is read. */
static void test_share(void **state)
{
	const char text[] = "7f00-7f10 r-xp 00000000 fd:01 1 /usr/bin/python3.11\n"
			    "7f20-7f30 rw-p 00000000 00:00 0\n"
			    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";
	pid_t self = getpid();
	const struct proc_maps_share_counters *c = proc_maps_share_counters();
	uint64_t reused = c->reused, file_reads = c->file_reads;

	(void)state;
	proc_maps_share_offer(self, 7, text, sizeof(text) - 1);
	assert_false(reads_text(proc_maps_fopen(NULL, (uint32_t)self), text)); /* no window */
	proc_maps_share_begin(self, 7, 2); /* two mappings: the gate is not one of mm's */
	assert_true(reads_text(proc_maps_fopen(NULL, (uint32_t)self), text));
	assert_true(reads_text(proc_maps_fopen("/proc", (uint32_t)self), text));
	assert_null(proc_maps_fopen(NULL, 0x7ffffff0)); /* no such pid: its file, not the text */
	assert_null(proc_maps_fopen("/nonexistent-root", (uint32_t)self));
	proc_maps_share_end();
	assert_false(reads_text(proc_maps_fopen(NULL, (uint32_t)self), text));
	proc_maps_share_begin(self, 7, 3); /* it maps more now */
	assert_false(reads_text(proc_maps_fopen(NULL, (uint32_t)self), text));
	proc_maps_share_begin(self, 8, 2); /* another program */
	assert_false(reads_text(proc_maps_fopen(NULL, (uint32_t)self), text));
	proc_maps_share_free();
	proc_maps_share_begin(self, 7, 2);
	assert_false(reads_text(proc_maps_fopen(NULL, (uint32_t)self), text));
	proc_maps_share_end();
	assert_int_equal(c->reused - reused, 2);
	assert_int_equal(c->file_reads - file_reads, 7);
	/* A reader that read the file inside a window leaves it to the window's next reader. */
	proc_maps_share_begin(self, 9, 0);
	fclose(proc_maps_fopen(NULL, (uint32_t)self));
	fclose(proc_maps_fopen(NULL, (uint32_t)self));
	proc_maps_share_end();
	assert_int_equal(c->reused - reused, 3);
	assert_int_equal(c->file_reads - file_reads, 8);
	proc_maps_share_free();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
