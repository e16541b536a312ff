/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `otelprofd [--alloc] -- PROGRAM ARGS`: the program otelprofd starts and profiles until it exits.
 * command_start() forks a child that waits (on a pipe) before it execs, so its pid can be the BPF
 * programs' target and the probes attached before its first instruction; command_release() lets
 * it exec. With alloc_lib set the child's environment preloads that library (LD_PRELOAD, after any
 * preload already set) and, with alloc_sample, sets OTELPROFD_ALLOC_SAMPLE.
 */
#ifndef OTELPROFD_COMMAND_H
#define OTELPROFD_COMMAND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Zeroed: no program (every function then does nothing). */
struct command {
	pid_t pid;     /* the child, or 0 */
	int go_fd;     /* write end of the pipe the child waits on, or -1 */
	int status;    /* its wait status once it exited */
	bool exited;
};

struct command_config {
	char **argv;              /* PROGRAM and ARGS, NULL-terminated */
	const char *alloc_lib;    /* preload this library (NULL: none) */
	uint64_t alloc_sample;    /* OTELPROFD_ALLOC_SAMPLE for it (0: not set) */
};

/* Fork the child, waiting. 0 or -errno (logged). */
int command_start(struct command *c, const struct command_config *cfg);
/* Let the child exec its program (a program that cannot be run exits 127, said by the child). */
void command_release(struct command *c);
/* The child exited (reaped now or before): c->status says how. */
bool command_exited(struct command *c);
/* Kill (SIGKILL) and reap a child that has not exited (a failed setup). */
void command_abort(struct command *c);
/* The exit status otelprofd passes on: the program's, or 128 + its signal. */
int command_exit_code(const struct command *c);

#endif
