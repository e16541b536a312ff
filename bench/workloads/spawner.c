// SPDX-License-Identifier: Apache-2.0
/*
 * Start RATE new processes per second for SECONDS seconds, each running COMMAND [ARGS...], and reap
 * them. Prints the rate achieved. Usage: spawner RATE SECONDS COMMAND [ARGS...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double rate, seconds, start, next;
	long started = 0;

	if (argc < 4)
		return 2;
	rate = atof(argv[1]);
	seconds = atof(argv[2]);
	start = next = now();
	while (now() - start < seconds) {
		pid_t pid = fork();

		if (pid == 0) {
			execv(argv[3], argv + 3);
			_exit(127);
		}
		if (pid > 0)
			started++;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		next += 1.0 / rate;
		if (next > now())
			usleep((useconds_t)((next - now()) * 1e6));
	}
	while (wait(NULL) > 0)
		;
	printf("%.1f\n", started / (now() - start));
	return 0;
}
