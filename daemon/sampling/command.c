// SPDX-License-Identifier: Apache-2.0
#include "sampling/command.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"

/* In the child, before exec: the preload and the sampling mean (errors end the child). */
static void child_environment(const struct command_config *cfg)
{
	const char *preload = getenv("LD_PRELOAD");
	char sample[32];

	if (cfg->alloc_lib) {
		char *value;

		if (preload && *preload) {
			if (asprintf(&value, "%s:%s", preload, cfg->alloc_lib) < 0)
				_exit(127);
		} else {
			value = (char *)cfg->alloc_lib;
		}
		if (setenv("LD_PRELOAD", value, 1))
			_exit(127);
	}
	if (cfg->alloc_sample) {
		snprintf(sample, sizeof(sample), "%" PRIu64, cfg->alloc_sample);
		if (setenv("OTELPROFD_ALLOC_SAMPLE", sample, 1))
			_exit(127);
	}
}

int command_start(struct command *c, const struct command_config *cfg)
{
	int fds[2], r;
	char go;

	*c = (struct command){ .go_fd = -1 };
	if (pipe2(fds, O_CLOEXEC)) {
		r = -errno;
		log_error("Failed to start %s: %s", cfg->argv[0], strerror(-r));
		return r;
	}
	c->pid = fork();
	if (c->pid < 0) {
		r = -errno;
		close(fds[0]);
		close(fds[1]);
		log_error("Failed to start %s: %s", cfg->argv[0], strerror(-r));
		c->pid = 0;
		return r;
	}
	if (c->pid == 0) {
		sigset_t none;

		close(fds[1]);
		/* The daemon blocked its signals for its signalfd: the program gets them back. */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* Wait for the go; a daemon that went away (EOF) means no program. */
		if (read(fds[0], &go, 1) != 1)
			_exit(127);
		child_environment(cfg);
		execvp(cfg->argv[0], cfg->argv);
		fprintf(stderr, "otelprofd: cannot run %s: %s\n", cfg->argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[0]);
	c->go_fd = fds[1];
	return 0;
}

void command_release(struct command *c)
{
	if (!c->pid || c->go_fd < 0)
		return;
	if (write(c->go_fd, "g", 1) != 1)
		log_warn("Failed to start the program: %s", strerror(errno));
	close(c->go_fd);
	c->go_fd = -1;
}

bool command_exited(struct command *c)
{
	if (!c->pid || c->exited)
		return c->exited;
	if (waitpid(c->pid, &c->status, WNOHANG) == c->pid)
		c->exited = true;
	return c->exited;
}

void command_abort(struct command *c)
{
	if (!c->pid)
		return;
	if (c->go_fd >= 0) {
		close(c->go_fd); /* the child reads EOF and exits */
		c->go_fd = -1;
	}
	if (c->exited)
		return;
	kill(c->pid, SIGKILL);
	if (waitpid(c->pid, &c->status, 0) == c->pid)
		c->exited = true;
}

int command_exit_code(const struct command *c)
{
	if (!c->exited)
		return 1;
	if (WIFEXITED(c->status))
		return WEXITSTATUS(c->status);
	return WIFSIGNALED(c->status) ? 128 + WTERMSIG(c->status) : 1;
}
