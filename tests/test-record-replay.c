// SPDX-License-Identifier: Apache-2.0
/* The queue of samples put off to the next turn (sampling/record_replay.c): copies in order,
 * bounded, freed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/record_replay.h"

static void test_fifo_bounded(void **state)
{
	struct record_replay *q = record_replay_new();
	char record[32];
	void *data;
	size_t size;
	unsigned tries;

	(void)state;
	assert_non_null(q);
	assert_false(record_replay_pop(q, &data, &size, &tries));
	for (int i = 0; i < RECORD_REPLAY_MAX; i++) {
		memset(record, 'a' + i % 26, sizeof(record));
		assert_int_equal(record_replay_push(q, record, (size_t)(i % 32) + 1, (unsigned)i % 3), 0);
	}
	assert_int_equal(record_replay_push(q, record, sizeof(record), 0), -ENOSPC);
	assert_int_equal(record_replay_count(q), RECORD_REPLAY_MAX);
	memset(record, 'z', sizeof(record)); /* the queue holds copies */
	for (int i = 0; i < RECORD_REPLAY_MAX / 2; i++) {
		assert_true(record_replay_pop(q, &data, &size, &tries));
		assert_int_equal(size, (size_t)(i % 32) + 1);
		assert_int_equal(tries, (unsigned)i % 3);
		assert_int_equal(((char *)data)[size - 1], 'a' + i % 26);
		free(data);
	}
	/* Room again, and the order kept across the ring's end. */
	assert_int_equal(record_replay_push(q, "xyz", 3, 2), 0);
	assert_int_equal(record_replay_count(q), RECORD_REPLAY_MAX / 2 + 1);
	for (int i = RECORD_REPLAY_MAX / 2; i < RECORD_REPLAY_MAX; i++) {
		assert_true(record_replay_pop(q, &data, &size, &tries));
		assert_int_equal(size, (size_t)(i % 32) + 1);
		free(data);
	}
	assert_true(record_replay_pop(q, &data, &size, &tries));
	assert_int_equal(size, 3);
	assert_int_equal(tries, 2);
	assert_memory_equal(data, "xyz", 3);
	free(data);
	/* What is left is freed with the queue (ASan's leak check). */
	assert_int_equal(record_replay_push(q, "left", 4, 1), 0);
	record_replay_free(q);
	record_replay_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
