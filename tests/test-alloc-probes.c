// SPDX-License-Identifier: Apache-2.0
/* --alloc's files (daemon/sampling/alloc_probes.c, daemon/process/usdt_notes.c): the otel_memory
 * notes of libotelprofd-alloc.so and of files without them, a file attached once, and a scan of a
 * process (this one) that maps no such file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/usdt_notes.h"
#include "sampling/alloc_probes.h"

static bool has(const char *path, const char *provider)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool r;

	assert_true(fd >= 0);
	r = usdt_notes_have_provider(fd, provider);
	close(fd);
	return r;
}

static void test_notes(void **state)
{
	char junk[] = "/tmp/otelprofd-usdt-XXXXXX";
	int fd = mkstemp(junk);

	(void)state;
	assert_true(has(ALLOC_LIB, "otel_memory"));
	assert_false(has(ALLOC_LIB, "otel_mem"));   /* a prefix is not the provider */
	assert_false(has(ALLOC_LIB, "nope"));
	assert_false(has("/proc/self/exe", "otel_memory"));
	/* Not ELF, and an ELF header cut short. */
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "\177ELF\2\1\1", 7), 7);
	close(fd);
	assert_false(has(junk, "otel_memory"));
	unlink(junk);
}

static int attached;
static char last[4096];

static int attach(void *ctx, const char *path)
{
	(void)ctx;
	attached++;
	snprintf(last, sizeof(last), "%s", path);
	return 0;
}

static void test_files(void **state)
{
	pid_t self = getpid();
	struct alloc_probes *ap = alloc_probes_new(&(struct alloc_probes_config){
		.attach = attach, .pids = &self, .npids = 1,
	});

	(void)state;
	assert_non_null(ap);
	assert_int_equal(alloc_probes_add_file(ap, ALLOC_LIB), 0);
	assert_int_equal(attached, 1);
	assert_string_equal(last, ALLOC_LIB);
	assert_int_equal(alloc_probes_add_file(ap, ALLOC_LIB), 0); /* known: not attached twice */
	assert_int_equal(attached, 1);
	assert_int_equal(alloc_probes_add_file(ap, "/proc/self/exe"), -ENOENT);
	assert_int_equal(alloc_probes_add_file(ap, "/nonexistent/lib.so"), -ENOENT);
	/* This process maps no file with the probes: its files are looked at, none attached. */
	alloc_probes_scan(ap, 0);
	assert_int_equal(alloc_probes_counters(ap)->scans, 1);
	assert_int_equal(alloc_probes_counters(ap)->processes_read, 1);
	/* Its mappings are opened through /proc/PID/map_files: root's (the unit suite runs anywhere). */
	if (geteuid() == 0)
		assert_true(alloc_probes_counters(ap)->files_checked >= 2);
	assert_int_equal(attached, 1);
	assert_int_equal(alloc_probes_counters(ap)->files_attached, 1);
	/* Seen: the next scan does not read its maps again. */
	alloc_probes_scan(ap, 0);
	assert_int_equal(alloc_probes_counters(ap)->processes_read, 1);
	alloc_probes_free(ap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_notes),
		cmocka_unit_test(test_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
