/*
 * A storm of short-lived processes: storm RATE SECONDS BURN_MS starts RATE processes a second for
 * SECONDS seconds. Each child names itself in its own environment (OTEL_SERVICE_NAME=storm-PID,
 * with its own pid), execs this program again and burns BURN_MS of CPU in storm_burn() before it
 * exits, so a profile can check that every sample is attributed to the process that took it.
 * Prints the number of children started.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t __attribute__((noinline)) storm_burn(uint64_t ms)
{
	uint64_t end = now_ns() + ms * 1000000ULL, x = 1;

	while (now_ns() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

static void reap(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(int argc, char **argv)
{
	uint64_t rate, seconds, burn, start, next, period, started = 0;
	char self[4096];
	ssize_t n;

	if (argc == 3 && !strcmp(argv[1], "burn")) {
		sink = storm_burn(strtoull(argv[2], NULL, 10));
		return 0;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: storm RATE SECONDS BURN_MS\n");
		return 2;
	}
	rate = strtoull(argv[1], NULL, 10);
	seconds = strtoull(argv[2], NULL, 10);
	burn = strtoull(argv[3], NULL, 10);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || !rate)
		return 2;
	self[n] = 0;
	period = 1000000000ULL / rate;
	start = next = now_ns();
	while (now_ns() < start + seconds * 1000000000ULL) {
		pid_t pid = fork();

		if (pid == 0) {
			char name[64];

			snprintf(name, sizeof(name), "storm-%d", (int)getpid());
			setenv("OTEL_SERVICE_NAME", name, 1);
			execl(self, self, "burn", argv[3], (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			started++;
		reap();
		next += period;
		while (now_ns() < next) {
			struct timespec ts = { 0, 200000 };

			nanosleep(&ts, NULL);
			reap();
		}
	}
	while (wait(NULL) > 0)
		;
	printf("%llu\n", (unsigned long long)started);
	return 0;
}
