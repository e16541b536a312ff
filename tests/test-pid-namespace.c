// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sampling/pid_namespace.h"

/* A fake /proc whose self links to "self_target" and whose self/ns/pid is a file: its inode is not
 * the initial namespace's, so it reads as a namespace of its own. */
static void fake_proc(char *proc, const char *self_target)
{
	char path[256], target[64];

	assert_non_null(mkdtemp(proc));
	snprintf(target, sizeof(target), "%s", self_target);
	snprintf(path, sizeof(path), "%s/%s", proc, target);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%s/ns", proc, target);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%s/ns/pid", proc, target);
	fclose(fopen(path, "w"));
	snprintf(path, sizeof(path), "%s/self", proc);
	assert_int_equal(symlink(target, path), 0);
}

static void remove_tree(const char *proc)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", proc);
	assert_int_equal(system(cmd), 0);
}

/* /proc of the daemon's own namespace: translated, with the device and inode of its ns/pid. */
static void test_own_namespace(void **state)
{
	char proc[] = "/tmp/test-pid-namespaceXXXXXX", self[32], path[256];
	struct pid_namespace ns;
	struct stat st;

	(void)state;
	snprintf(self, sizeof(self), "%d", (int)getpid());
	fake_proc(proc, self);
	assert_int_equal(pid_namespace_read(proc, &ns), 0);
	snprintf(path, sizeof(path), "%s/self/ns/pid", proc);
	assert_int_equal(stat(path, &st), 0);
	assert_true(ns.own);
	assert_true(ns.dev == st.st_dev && ns.ino == st.st_ino);
	remove_tree(proc);
}

/* /proc of another namespace (self is not getpid()): refused, and the line names the fix. */
static void test_other_proc(void **state)
{
	char proc[] = "/tmp/test-pid-namespaceXXXXXX", self[32];
	struct pid_namespace ns;

	(void)state;
	snprintf(self, sizeof(self), "%d", (int)getpid() + 1);
	fake_proc(proc, self);
	assert_int_equal(pid_namespace_read(proc, &ns), -EXDEV);
	assert_non_null(strstr(pid_namespace_refusal(-EXDEV), "hostPID"));
	assert_non_null(strstr(pid_namespace_refusal(-EXDEV), "--pid=host"));
	assert_non_null(strstr(pid_namespace_refusal(-ENOSYS), "--pid=host"));
	remove_tree(proc);
}

/* No PROC/self/ns/pid (a kernel without PID namespaces): the one namespace, nothing translated. */
static void test_no_namespaces(void **state)
{
	struct pid_namespace ns = { .own = true };

	(void)state;
	assert_int_equal(pid_namespace_read("/nonexistent-proc", &ns), 0);
	assert_false(ns.own);
}

/* The real /proc: whatever namespace this test runs in, it reads and agrees with /proc/self. */
static void test_real_proc(void **state)
{
	struct pid_namespace ns;

	(void)state;
	assert_int_equal(pid_namespace_read("/proc", &ns), 0);
	assert_true(ns.ino != 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_namespace),
		cmocka_unit_test(test_other_proc),
		cmocka_unit_test(test_no_namespaces),
		cmocka_unit_test(test_real_proc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
