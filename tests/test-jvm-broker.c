// SPDX-License-Identifier: Apache-2.0
/*
 * The JVM attach broker (runtimes/jvm/jvm_broker.h): a process of its own name holding no more
 * than its three capabilities; it checks each pid itself (this test is no JVM: refused), refuses
 * pids that are not ones, bounds its attaches a second, and, once it is gone, every attach says so.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jvm_broker.h"

/* A field of /proc/PID/status ("Name:"), its value in out. */
static bool status_field(pid_t pid, const char *field, char *out, size_t size)
{
	char path[64], line[256];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (!(f = fopen(path, "re")))
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field))) {
			snprintf(out, size, "%s", line + strlen(field) + strspn(line + strlen(field), " \t"));
			out[strcspn(out, "\n")] = 0;
			found = true;
		}
	fclose(f);
	return found;
}

static void test_broker(void **state)
{
	struct jvm_broker *b = jvm_broker_start(JVM_BROKER_CAPS);
	char value[64];
	bool busy = false;

	(void)state;
	assert_non_null(b);
	/* Its name and capabilities, once it has set them (polled: it runs on its own). */
	for (int i = 0; i < 500; i++) {
		if (status_field(jvm_broker_pid(b), "Name:", value, sizeof(value)) && !strcmp(value, JVM_BROKER_NAME))
			break;
		usleep(10000);
	}
	assert_string_equal(value, JVM_BROKER_NAME);
	assert_true(status_field(jvm_broker_pid(b), "CapEff:", value, sizeof(value)));
	assert_int_equal(strtoull(value, NULL, 16) & ~JVM_BROKER_CAPS, 0);
	assert_true(status_field(jvm_broker_pid(b), "NoNewPrivs:", value, sizeof(value)));
	assert_string_equal(value, "1");

	assert_int_equal(jvm_broker_attach(b, 0), -EINVAL);
	assert_int_equal(jvm_broker_attach(b, getpid()), -EPERM); /* not a HotSpot process */
	/* JVM_BROKER_RATE a second: a burst is put off before long. */
	for (int i = 0; i < 50 && !busy; i++) {
		int r = jvm_broker_attach(b, getpid());

		assert_true(r == -EPERM || r == -EBUSY);
		busy = r == -EBUSY;
	}
	assert_true(busy);

	/* Gone: every attach says so, and stop still reaps it. */
	assert_int_equal(kill(jvm_broker_pid(b), SIGKILL), 0);
	assert_int_equal(jvm_broker_attach(b, getpid()), -EPIPE);
	assert_int_equal(jvm_broker_attach(b, getpid()), -EPIPE);
	jvm_broker_stop(b);
}

static void test_stop(void **state)
{
	struct jvm_broker *b = jvm_broker_start(JVM_BROKER_CAPS);
	pid_t pid;

	(void)state;
	assert_non_null(b);
	pid = jvm_broker_pid(b);
	jvm_broker_stop(b); /* it reads the end of its requests, exits, and is reaped */
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	jvm_broker_stop(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_broker),
		cmocka_unit_test(test_stop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
