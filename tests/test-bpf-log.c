// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/bpf_log.h"

/* What libbpf prints when the verifier rejects a program: the whole verifier log arrives in ONE
 * message between BEGIN/END markers, then libbpf's own lines follow, one message each. */
static char *verifier_message(unsigned insns)
{
	size_t size = 64 + insns * 64 + 512;
	char *msg = malloc(size), *p = msg;

	p += sprintf(p, "libbpf: prog 'on_cpu_sample': -- BEGIN PROG LOAD LOG --\n0: R1=ctx(off=0,imm=0) R10=fp0\n");
	for (unsigned i = 1; i <= insns; i++)
		p += sprintf(p, "%u: (bf) r6 = r1                    ; R1=ctx(off=0,imm=0) R6_w=ctx\n", i);
	p += sprintf(p, "%u: (79) r1 = *(u64 *)(r2 +0)\nR2 invalid mem access 'scalar'\n"
		     "processed %u insns (limit 1000000) max_states_per_insn 0 total_states 2 peak_states 2 mark_read 1\n"
		     "-- END PROG LOAD LOG --\n", insns + 1, insns + 2);
	assert_true((size_t)(p - msg) < size);
	return msg;
}

static void test_verifier_tail(void **state)
{
	struct bpf_log *log = bpf_log_new(64);
	char *msg = verifier_message(100);
	const char *lines[20];
	unsigned n;

	(void)state;
	assert_non_null(log);
	assert_int_equal(bpf_log__append(log, "libbpf: prog 'on_cpu_sample': BPF program load failed: Permission denied\n"), 0);
	assert_int_equal(bpf_log__append(log, msg), 0);
	assert_int_equal(bpf_log__append(log, "libbpf: prog 'on_cpu_sample': failed to load: -13\n"), 0);
	assert_int_equal(bpf_log__append(log, "libbpf: failed to load object 'profile_bpf'\n"), 0);
	assert_int_equal(bpf_log__append(log, "libbpf: failed to load BPF skeleton 'profile_bpf': -13\n"), 0);

	n = bpf_log__tail(log, lines, 20);
	assert_int_equal(n, 20);
	/* The last lines: the verifier's reason, its summary, the end marker, then libbpf's lines. */
	assert_string_equal(lines[19], "libbpf: failed to load BPF skeleton 'profile_bpf': -13");
	assert_string_equal(lines[18], "libbpf: failed to load object 'profile_bpf'");
	assert_string_equal(lines[17], "libbpf: prog 'on_cpu_sample': failed to load: -13");
	assert_string_equal(lines[16], "-- END PROG LOAD LOG --");
	assert_non_null(strstr(lines[15], "processed 102 insns"));
	assert_string_equal(lines[14], "R2 invalid mem access 'scalar'");
	assert_string_equal(lines[13], "101: (79) r1 = *(u64 *)(r2 +0)");
	assert_non_null(strstr(lines[12], "100: (bf) r6 = r1"));
	/* 1 + (2 + 100 + 4) + 3 = 110 lines, 64 kept. */
	assert_int_equal(bpf_log__dropped(log), 110 - 64);

	/* Asking for more than is kept gives what is kept, oldest first. */
	{
		const char *all[100];

		n = bpf_log__tail(log, all, 100);
		assert_int_equal(n, 64);
		assert_string_equal(all[63], lines[19]);
	}
	bpf_log__clear(log);
	assert_int_equal(bpf_log__tail(log, lines, 20), 0);
	assert_int_equal(bpf_log__dropped(log), 0);
	free(msg);
	bpf_log_free(log);
}

static void test_pieces_and_bounds(void **state)
{
	struct bpf_log *log = bpf_log_new(4);
	const char *lines[8];
	char long_line[3 * BPF_LOG_LINE_MAX];

	(void)state;
	assert_null(bpf_log_new(0));
	/* A line printed in pieces is one line; a piece without its newline is shown as the last line. */
	assert_int_equal(bpf_log__append(log, "libbpf: one "), 0);
	assert_int_equal(bpf_log__tail(log, lines, 8), 1);
	assert_string_equal(lines[0], "libbpf: one ");
	assert_int_equal(bpf_log__append(log, "line\n\n\r\n  \nnext"), 0);
	assert_int_equal(bpf_log__tail(log, lines, 8), 2);
	assert_string_equal(lines[0], "libbpf: one line");
	assert_string_equal(lines[1], "next");
	/* With room for one line only, the pending piece is the last line. */
	assert_int_equal(bpf_log__tail(log, lines, 1), 1);
	assert_string_equal(lines[0], "next");
	assert_int_equal(bpf_log__tail(log, lines, 0), 0);

	/* A line longer than the bound is cut, not lost and not overflowing. */
	memset(long_line, 'x', sizeof(long_line) - 2);
	long_line[sizeof(long_line) - 2] = '\n';
	long_line[sizeof(long_line) - 1] = 0;
	assert_int_equal(bpf_log__append(log, long_line), 0);
	assert_int_equal(bpf_log__tail(log, lines, 8), 2);
	assert_int_equal(strlen(lines[1]), BPF_LOG_LINE_MAX - 1);
	assert_memory_equal(lines[1], "nextxxx", 7);

	/* The ring keeps the last 4. */
	for (int i = 0; i < 10; i++) {
		char line[32];

		snprintf(line, sizeof(line), "line %d\n", i);
		assert_int_equal(bpf_log__append(log, line), 0);
	}
	assert_int_equal(bpf_log__tail(log, lines, 8), 4);
	assert_string_equal(lines[0], "line 6");
	assert_string_equal(lines[3], "line 9");
	assert_int_equal(bpf_log__dropped(log), 12 - 4);
	bpf_log_free(log);
	bpf_log_free(NULL);
	bpf_log__clear(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verifier_tail),
		cmocka_unit_test(test_pieces_and_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
