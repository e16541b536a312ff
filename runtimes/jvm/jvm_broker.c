// SPDX-License-Identifier: Apache-2.0
#include "jvm_broker.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jvm_attach.h"
#include "jvm_attacher.h"
#include "sampling/privileges.h"

/* The daemon waits this long for an answer before it takes the broker as lost. */
#define REPLY_MS (JVM_BROKER_CHILD_MS + 2000)
/* The attach's own bound inside the child: below the kill. */
#define ATTACH_MS (JVM_BROKER_CHILD_MS - 500)

_Static_assert(ATTACH_MS >= RUNTIME_JVM_ATTACH_TIMEOUT_MS, "the child's attach has the attacher's time");

struct jvm_broker {
	pid_t pid;
	int fd;        /* the daemon's end of the socketpair; -1 once the broker is lost */
	uint32_t seq;  /* of the last request: an answer to an earlier one (that timed out) is skipped */
};

/* One request and its answer, on a SOCK_SEQPACKET socketpair (one message each). */
struct request {
	int32_t pid;
	uint32_t seq;
};

struct answer {
	int32_t result; /* 0 or -errno */
	uint32_t seq;   /* the request's */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the child: the JVM's user, no capability ---- */

/* Take on t's user: its groups, gid, uid (in that order: each needs the capability the next
 * drops), then drop every capability, which a non-root uid would keep. Nothing changes for a JVM
 * of the broker's own user. */
static int enter_user(const struct jvm_attach_target *t)
{
	if (t->uid != geteuid() || t->gid != getegid()) {
		if (setgroups(t->ngroups, t->groups) || setresgid(t->gid, t->gid, t->gid) ||
		    setresuid(t->uid, t->uid, t->uid))
			return -EPERM;
		if (geteuid() != t->uid || getegid() != t->gid)
			return -EPERM;
	}
	return privileges_keep_only(0);
}

static void child_attach(const struct jvm_attach_target *t)
{
	int r = enter_user(t);

	if (!r)
		r = jvm_attach_perfmap(t, ATTACH_MS);
	_exit(r < 0 && -r < 256 ? -r : r ? EIO : 0);
}

/* ---- the broker ---- */

/* Wait for child (whose pidfd is child_fd) until its deadline, killed after it. Its answer. */
static int wait_child(pid_t child, int child_fd)
{
	struct pollfd p = { .fd = child_fd, .events = POLLIN };
	int status, r;

	do
		r = poll(&p, 1, JVM_BROKER_CHILD_MS);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		kill(child, SIGKILL);
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return -ECHILD;
	if (r <= 0)
		return -ETIMEDOUT;
	return WIFEXITED(status) ? -WEXITSTATUS(status) : -ECHILD;
}

static int attach_as_owner(pid_t pid)
{
	struct jvm_attach_target t;
	pid_t child;
	int child_fd, r;

	if ((r = jvm_attach_target_open(pid, &t)))
		return r;
	child = fork();
	if (child == 0)
		child_attach(&t);
	r = child < 0 ? -errno : 0;
	jvm_attach_target_close(&t);
	if (r)
		return r;
	if ((child_fd = (int)syscall(SYS_pidfd_open, child, 0)) < 0) {
		r = -errno;
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return r;
	}
	r = wait_child(child, child_fd);
	close(child_fd);
	return r;
}

/* Keep only fd (moved to 3) beside the standard streams. */
static int keep_only_fd(int fd)
{
	if (fd != 3 && (dup2(fd, 3) < 0 || close(fd)))
		return -errno;
	if (syscall(SYS_close_range, 4, ~0U, 0)) {
		for (int i = 4; i < 1024; i++)
			close(i);
	}
	return 0;
}

static bool read_request(int fd, struct request *q)
{
	ssize_t n;

	do
		n = read(fd, q, sizeof(*q));
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(*q);
}

static _Noreturn void broker_main(int fd, pid_t daemon, uint64_t keep_caps)
{
	double tokens = JVM_BROKER_RATE;
	uint64_t last = now_ms();
	struct request q;
	struct answer a;

	/* Gone with the daemon, whatever happens to it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != daemon)
		_exit(0);
	prctl(PR_SET_NAME, JVM_BROKER_NAME);
	if (keep_only_fd(fd) || privileges_keep_only(keep_caps) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		_exit(1);
	fd = 3;
	while (read_request(fd, &q)) {
		uint64_t now = now_ms();

		tokens += (double)(now - last) * JVM_BROKER_RATE / 1000.0;
		if (tokens > JVM_BROKER_RATE)
			tokens = JVM_BROKER_RATE;
		last = now;
		a = (struct answer){ .seq = q.seq };
		if (q.pid <= 0) {
			a.result = -EINVAL;
		} else if (tokens < 1) {
			a.result = -EBUSY;
		} else {
			tokens -= 1;
			a.result = attach_as_owner(q.pid);
		}
		if (send(fd, &a, sizeof(a), MSG_NOSIGNAL) != (ssize_t)sizeof(a))
			break;
	}
	_exit(0);
}

struct jvm_broker *jvm_broker_start(uint64_t keep_caps)
{
	struct jvm_broker *b = calloc(1, sizeof(*b));
	pid_t daemon = getpid();
	int sv[2], e;

	if (!b)
		return NULL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		e = errno;
		free(b);
		errno = e;
		return NULL;
	}
	b->pid = fork();
	if (b->pid == 0) {
		close(sv[0]);
		broker_main(sv[1], daemon, keep_caps);
	}
	e = errno;
	close(sv[1]);
	if (b->pid < 0) {
		close(sv[0]);
		free(b);
		errno = e;
		return NULL;
	}
	b->fd = sv[0];
	return b;
}

/* The broker is gone or out of step: no more requests. */
static int lost(struct jvm_broker *b)
{
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	return -EPIPE;
}

int jvm_broker_attach(struct jvm_broker *b, pid_t pid)
{
	struct request q = { .pid = pid, .seq = ++b->seq };
	uint64_t deadline = now_ms() + REPLY_MS;
	struct answer a;

	if (b->fd < 0)
		return -EPIPE;
	if (send(b->fd, &q, sizeof(q), MSG_NOSIGNAL) != (ssize_t)sizeof(q))
		return lost(b);
	/* The answer to this request; one to an earlier request that timed out here is skipped. */
	for (;;) {
		struct pollfd p = { .fd = b->fd, .events = POLLIN };
		uint64_t now = now_ms();
		ssize_t n;
		int r;

		if (now >= deadline)
			return -ETIMEDOUT; /* still the broker's: its answer comes later, skipped then */
		r = poll(&p, 1, (int)(deadline - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return lost(b);
		if (r == 0)
			continue;
		n = recv(b->fd, &a, sizeof(a), 0);
		if (n != (ssize_t)sizeof(a) || a.result > 0)
			return lost(b); /* the broker ended (0) or is not one */
		if (a.seq == q.seq)
			return a.result;
	}
}

pid_t jvm_broker_pid(const struct jvm_broker *b)
{
	return b->pid;
}

void jvm_broker_stop(struct jvm_broker *b)
{
	if (!b)
		return;
	if (b->fd >= 0)
		close(b->fd); /* the broker reads the end of its requests and exits */
	while (waitpid(b->pid, NULL, 0) < 0 && errno == EINTR)
		;
	free(b);
}
