// SPDX-License-Identifier: Apache-2.0
/*
 * A storm of short-lived processes: storm RATE SECONDS BURN_MS [REUSE_EVERY] starts RATE processes a
 * second for SECONDS seconds. Child number N names itself in its own environment
 * (OTEL_SERVICE_NAME=storm-N), execs this program again, names its thread stN and burns BURN_MS in
 * storm_burn() before it exits, so a profile can check that every sample is attributed to the
 * process that took it. With REUSE_EVERY, every REUSE_EVERY-th child is given the pid of the child
 * reaped last (through /proc/sys/kernel/ns_last_pid; needs root), so pids are reused within the run.
 * With STORM_ALL set, all RATE * SECONDS children are started however long a loaded machine takes
 * (at most 30 times SECONDS): a test then sees the same storm on a busy machine, only slower.
 * Prints the number of children started, then the number that got a reaped child's pid, then one
 * "N PID" line per child.
 */
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "burn.h"

static volatile uint64_t sink;

DEFINE_BURN(storm_burn)

static pid_t last_reaped;

static void reap(void)
{
	pid_t pid;

	while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
		last_reaped = pid;
}

/* The next fork gets pid (unless another process forks first). */
static void reuse_pid(pid_t pid)
{
	FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "we");

	if (!f)
		return;
	fprintf(f, "%d", (int)pid - 1);
	fclose(f);
}

int main(int argc, char **argv)
{
	uint64_t rate, seconds, burn, start, next, period, started = 0, reuse_every = 0, reused = 0, want, until;
	static pid_t pids[1 << 16];
	char self[4096];
	ssize_t n;

	if (argc == 4 && !strcmp(argv[1], "burn")) {
		char name[16];

		snprintf(name, sizeof(name), "st%s", argv[3]);
		prctl(PR_SET_NAME, name);
		sink = storm_burn(strtoull(argv[2], NULL, 10));
		return 0;
	}
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: storm RATE SECONDS BURN_MS [REUSE_EVERY]\n");
		return 2;
	}
	/* STORM_WAIT_LINE set: start the storm once a line arrives on stdin (a profiler attached to this
	 * process first, however long its start took). */
	if (getenv("STORM_WAIT_LINE")) {
		char line[16];

		if (!fgets(line, sizeof(line), stdin))
			return 2;
	}
	rate = strtoull(argv[1], NULL, 10);
	seconds = strtoull(argv[2], NULL, 10);
	burn = strtoull(argv[3], NULL, 10);
	if (argc == 5)
		reuse_every = strtoull(argv[4], NULL, 10);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || !rate)
		return 2;
	self[n] = 0;
	period = 1000000000ULL / rate;
	start = next = burn_now_ns();
	want = getenv("STORM_ALL") ? rate * seconds : sizeof(pids) / sizeof(pids[0]);
	until = start + (getenv("STORM_ALL") ? 30 : 1) * seconds * 1000000000ULL;
	if (want > sizeof(pids) / sizeof(pids[0]))
		want = sizeof(pids) / sizeof(pids[0]);
	while (burn_now_ns() < until && started < want) {
		pid_t reuse = reuse_every && started % reuse_every == reuse_every - 1 ? last_reaped : 0, pid;

		if (reuse)
			reuse_pid(reuse);
		pid = fork();
		if (pid == 0) {
			char name[64], seq[32];

			snprintf(seq, sizeof(seq), "%llu", (unsigned long long)started);
			snprintf(name, sizeof(name), "storm-%s", seq);
			setenv("OTEL_SERVICE_NAME", name, 1);
			/* Below the profiler's priority: the storm asks for more CPU than 2 cores have,
			 * and a starved profiler would only measure its ring buffer overflowing. */
			if (nice(10) < 0)
				_exit(126);
			execl(self, self, "burn", argv[3], seq, (char *)NULL);
			_exit(127);
		}
		if (pid > 0) {
			reused += reuse && pid == reuse;
			pids[started++] = pid;
		}
		reap();
		next += period;
		while (burn_now_ns() < next) {
			struct timespec ts = { 0, 200000 };

			nanosleep(&ts, NULL);
			reap();
		}
	}
	while (wait(NULL) > 0)
		;
	printf("%llu\n%llu\n", (unsigned long long)started, (unsigned long long)reused);
	for (uint64_t i = 0; i < started; i++)
		printf("%llu %d\n", (unsigned long long)i, (int)pids[i]);
	return 0;
}
