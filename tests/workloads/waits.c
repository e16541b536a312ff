// SPDX-License-Identifier: Apache-2.0
/*
 * Off-CPU test workload: threads that wait in known functions and threads that only compute, each
 * waiting thread timing its own waits. Usage: waits SECONDS (mixed) or waits block (one thread
 * blocked on a pipe until killed). Both wait for a line on stdin first, so a profiler can attach
 * before the first wait; "mixed" then prints "function total_ns" per waiting function and exits.
 *
 *   wait_sleep:  nanosleep 10 ms in a loop
 *   wait_pipe:   read() on a pipe that pipe_feeder writes every 20 ms (the feeder sleeps in
 *                feeder_sleep)
 *   wait_mutex:  pthread_mutex_lock on a mutex that compute_locked holds while computing 15 ms
 *                (then waiter_pause sleeps 1 ms)
 *   compute_only: computes without a pause
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "burn.h"

DEFINE_BURN(compute_only)
DEFINE_BURN(compute_locked)

static atomic_bool stop;
static int pipe_fds[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t sleep_ns, pipe_ns, mutex_ns; /* each written by one thread, read after join */

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ms * 1000000L };

	nanosleep(&ts, NULL);
}

__attribute__((noinline)) void wait_sleep(void)
{
	uint64_t t = burn_now_ns();

	sleep_ms(10);
	sleep_ns += burn_now_ns() - t;
}

__attribute__((noinline)) void wait_pipe(void)
{
	uint64_t t = burn_now_ns();
	char c;

	if (read(pipe_fds[0], &c, 1) != 1)
		atomic_store(&stop, true);
	pipe_ns += burn_now_ns() - t;
}

__attribute__((noinline)) void wait_mutex(void)
{
	uint64_t t = burn_now_ns();

	pthread_mutex_lock(&lock);
	mutex_ns += burn_now_ns() - t;
	pthread_mutex_unlock(&lock);
}

/* The waiter rests between locks, so it does not loop on the CPU (and get preempted) while the
 * holder yields: its off-CPU time is its waits. */
__attribute__((noinline)) void waiter_pause(void)
{
	sleep_ms(1);
}

__attribute__((noinline)) void feeder_sleep(void)
{
	sleep_ms(20);
}

static void *sleeper(void *arg)
{
	while (!atomic_load(&stop))
		wait_sleep();
	return arg;
}

static void *reader(void *arg)
{
	while (!atomic_load(&stop))
		wait_pipe();
	return arg;
}

static void *feeder(void *arg)
{
	while (!atomic_load(&stop)) {
		feeder_sleep();
		if (write(pipe_fds[1], "x", 1) != 1)
			break;
	}
	return arg;
}

static void *holder(void *arg)
{
	while (!atomic_load(&stop)) {
		pthread_mutex_lock(&lock);
		compute_locked(15);
		pthread_mutex_unlock(&lock);
		sched_yield(); /* let the waiter in now and then */
	}
	return arg;
}

static void *waiter(void *arg)
{
	while (!atomic_load(&stop)) {
		wait_mutex();
		waiter_pause();
	}
	return arg;
}

static void *computer(void *arg)
{
	while (!atomic_load(&stop))
		compute_only(5);
	return arg;
}

__attribute__((noinline)) void blocked_forever(void)
{
	char c;

	/* Nobody writes: blocked until the process is killed. */
	while (read(pipe_fds[0], &c, 1) > 0)
		;
}

int main(int argc, char **argv)
{
	void *(*fns[])(void *) = { sleeper, reader, feeder, holder, waiter, computer };
	pthread_t threads[sizeof(fns) / sizeof(fns[0])];
	char line[16];

	if (argc != 2 || pipe(pipe_fds)) {
		fprintf(stderr, "usage: waits SECONDS | waits block\n");
		return 2;
	}
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	if (!strcmp(argv[1], "block")) {
		blocked_forever();
		return 0;
	}
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		pthread_create(&threads[i], NULL, fns[i], NULL);
	sleep((unsigned)atoi(argv[1]));
	atomic_store(&stop, true);
	close(pipe_fds[1]); /* a reader blocked on the pipe sees its end */
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		pthread_join(threads[i], NULL);
	printf("wait_sleep %llu\nwait_pipe %llu\nwait_mutex %llu\n", (unsigned long long)sleep_ns,
	       (unsigned long long)pipe_ns, (unsigned long long)mutex_ns);
	return 0;
}
