// SPDX-License-Identifier: Apache-2.0
/*
 * Which kernels need CAP_BPF kept for the BPF counters' reads after the capability drop: before 5.19
 * with kernel.unprivileged_bpf_disabled set (or unreadable), and no other.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sampling/privileges.h"

static void test_bpf_needs_cap(void **state)
{
	/* Ubuntu 22.04 and Debian 11 kernels, the sysctl set to 2 (their default) or 1. */
	assert_true(privileges_bpf_needs_cap("5.15.0-91-generic", 2));
	assert_true(privileges_bpf_needs_cap("5.10.0-28-amd64", 1));
	assert_true(privileges_bpf_needs_cap("5.18.19", 2));
	assert_true(privileges_bpf_needs_cap("4.19.0", -1));
	/* Unset: bpf() on held maps works without it. */
	assert_false(privileges_bpf_needs_cap("5.15.0-91-generic", 0));
	/* 5.19 and later only refuse loading programs and creating maps. */
	assert_false(privileges_bpf_needs_cap("5.19.0", 2));
	assert_false(privileges_bpf_needs_cap("6.1.0-18-amd64", 2));
	assert_false(privileges_bpf_needs_cap("6.18.44-fc-v669", -1));
	/* A release that cannot be read keeps it: losing the counters is worse. */
	assert_true(privileges_bpf_needs_cap("weird", 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bpf_needs_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
