// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "profile/intern.h"

static void test_intern(void **state)
{
	struct intern *t = intern_new(1000);
	int added;
	size_t len;

	assert_int_equal(intern_put(t, "a", 2, &added), 0);
	assert_int_equal(added, 1);
	assert_int_equal(intern_put(t, "b", 2, &added), 1);
	assert_int_equal(intern_put(t, "a", 2, &added), 0);
	assert_int_equal(added, 0);
	assert_int_equal(intern_find(t, "b", 2), 1);
	assert_int_equal(intern_find(t, "c", 2), -ENOENT);
	assert_string_equal(intern_key(t, 1, &len), "b");
	assert_int_equal(len, 2);
	assert_null(intern_key(t, 2, NULL));
	for (int i = 0; i < 998; i++) {
		char key[16];

		snprintf(key, sizeof(key), "k%d", i);
		assert_int_equal(intern_put(t, key, strlen(key), NULL), i + 2);
	}
	assert_int_equal(intern_put(t, "one more", 8, NULL), -ENOSPC);
	assert_int_equal(intern_put(t, "k5", 2, NULL), 7);
	assert_int_equal(intern_count(t), 1000);
	intern_free(t);
	intern_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_intern) };

	return cmocka_run_group_tests(tests, NULL, NULL);
}
