// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "process/host_view.h"

/* Runs a shell command made of fmt, every %s of which is the fake /proc's path. */
static void sh(const char *fmt, const char *dir)
{
	char cmd[1024], *out = cmd;

	for (const char *p = fmt; *p && out < cmd + sizeof(cmd) - 256; p++) {
		if (p[0] == '%' && p[1] == 's') {
			out += snprintf(out, 256, "%s", dir);
			p++;
		} else {
			*out++ = *p;
		}
	}
	*out = 0;
	assert_int_equal(system(cmd), 0);
}

/* A fake /proc: pid 1 in another UTS namespace and root (a hostPID pod), then in ours (a host). */
static void test_host_view(void **state)
{
	char proc[] = "/tmp/test-host-viewXXXXXX";

	(void)state;
	assert_non_null(mkdtemp(proc));
	assert_int_equal(host_view_same_namespace(proc, "uts"), -1);
	assert_int_equal(host_view_same_root(proc), -1);

	sh("mkdir -p %s/self/ns %s/1/ns %s/1/root && echo a > %s/self/ns/uts", proc);
	sh("echo b > %s/1/ns/uts", proc);
	assert_int_equal(host_view_same_namespace(proc, "uts"), 0);
	assert_int_equal(host_view_same_namespace(proc, "mnt"), -1);
	assert_int_equal(host_view_same_root(proc), 0);

	sh("rm %s/1/ns/uts && ln %s/self/ns/uts %s/1/ns/uts && rmdir %s/1/root", proc);
	sh("ln -s / %s/1/root", proc);
	assert_int_equal(host_view_same_namespace(proc, "uts"), 1);
	assert_int_equal(host_view_same_root(proc), 1);
	sh("rm -r %s", proc);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_host_view) };

	return cmocka_run_group_tests(tests, NULL, NULL);
}
