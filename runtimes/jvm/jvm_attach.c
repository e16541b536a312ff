// SPDX-License-Identifier: Apache-2.0
#include "jvm_attach.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Pause between looks for the attach socket after SIGQUIT. */
#define SOCKET_POLL_MS 20
/* Bytes of a reply read (the first line says whether the command ran). */
#define REPLY_MAX 256

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool jvm_attach_is_hotspot(pid_t pid)
{
	static const char lib[] = "/libjvm.so";
	char path[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if (!(f = fopen(path, "re")))
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);

		if (n && line[n - 1] == '\n')
			line[--n] = 0;
		found = n >= sizeof(lib) - 1 && !strcmp(line + n - (sizeof(lib) - 1), lib);
	}
	fclose(f);
	return found;
}

static int pidfd_open_of(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_signal(int pid_fd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pid_fd, sig, NULL, 0);
}

/* The process of the pidfd has not exited (a pidfd polls readable once it has). */
static bool alive(int pid_fd)
{
	struct pollfd p = { .fd = pid_fd, .events = POLLIN };

	return poll(&p, 1, 0) == 0;
}

/* The "Groups:" list into t (the first JVM_ATTACH_MAX_GROUPS). */
static void parse_groups(const char *list, struct jvm_attach_target *t)
{
	char *end;

	t->ngroups = 0;
	while (t->ngroups < JVM_ATTACH_MAX_GROUPS) {
		unsigned long g = strtoul(list, &end, 10);

		if (end == list)
			break;
		t->groups[t->ngroups++] = (gid_t)g;
		list = end;
	}
}

/* What /proc/PID/status says of the credentials, the pid in its namespace and SIGQUIT. */
static int read_status(struct jvm_attach_target *t)
{
	char path[64], line[1024];
	unsigned long long sigcgt = 0;
	unsigned seen = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", t->pid);
	if (!(f = fopen(path, "re")))
		return errno == ENOENT ? -ESRCH : -errno;
	t->nspid = t->pid;
	while (fgets(line, sizeof(line), f)) {
		unsigned long real, eff;
		char *last;

		if (sscanf(line, "Uid: %lu %lu", &real, &eff) == 2) {
			t->uid = (uid_t)eff;
			seen |= 1;
		} else if (sscanf(line, "Gid: %lu %lu", &real, &eff) == 2) {
			t->gid = (gid_t)eff;
			seen |= 2;
		} else if (!strncmp(line, "Groups:", 7)) {
			parse_groups(line + 7, t);
		} else if (!strncmp(line, "NSpid:", 6) && (last = strrchr(line, '\t')) && atoi(last + 1) > 0) {
			t->nspid = (pid_t)atoi(last + 1);
		} else if (sscanf(line, "SigCgt: %llx", &sigcgt) == 1) {
			t->catches_sigquit = sigcgt & (1ULL << (SIGQUIT - 1));
		}
	}
	fclose(f);
	return seen == 3 ? 0 : -EPROTO;
}

int jvm_attach_target_open(pid_t pid, struct jvm_attach_target *t)
{
	char path[64];
	int r;

	*t = (struct jvm_attach_target){ .pid = pid, .pid_fd = -1, .root_fd = -1 };
	/* The pidfd first: if the process is still alive after the reads below, they were of it. */
	if ((t->pid_fd = pidfd_open_of(pid)) < 0)
		return -errno;
	r = jvm_attach_is_hotspot(pid) ? read_status(t) : -EPERM;
	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	if (!r && (t->root_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = errno == ENOENT ? -ESRCH : -errno;
	if (!r && !alive(t->pid_fd))
		r = -ESRCH;
	if (r)
		jvm_attach_target_close(t);
	return r;
}

void jvm_attach_target_close(struct jvm_attach_target *t)
{
	if (t->pid_fd >= 0)
		close(t->pid_fd);
	if (t->root_fd >= 0)
		close(t->root_fd);
	t->pid_fd = t->root_fd = -1;
}

/* The path of name in the JVM's /tmp, reached through its root fd. */
static int tmp_path(char *buf, size_t size, const struct jvm_attach_target *t, const char *name)
{
	int n = snprintf(buf, size, "/proc/self/fd/%d/tmp/%s%d", t->root_fd, name, t->nspid);

	return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

static int socket_path(struct sockaddr_un *sa, const struct jvm_attach_target *t)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	return tmp_path(sa->sun_path, sizeof(sa->sun_path), t, ".java_pid");
}

static bool is_socket(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISSOCK(st.st_mode);
}

/* Create the trigger file in the JVM's /tmp, one of the two places it looks. Not its working
 * directory, the other: a process chooses that one, and could make the daemon create files in a
 * directory of the host that root owns. Its path in trigger (to remove it after), or "" when one
 * was there already (jcmd's, left for it). */
static int create_trigger(const struct jvm_attach_target *t, char *trigger, size_t size)
{
	int fd;

	if ((fd = tmp_path(trigger, size, t, ".attach_pid")))
		return fd;
	fd = open(trigger, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == EEXIST) {
		trigger[0] = 0;
		return 0;
	}
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Wait for the listener's socket (started by SIGQUIT). */
static int start_listener(const struct jvm_attach_target *t, const char *sock, long long deadline)
{
	char trigger[128];
	int r;

	if (!t->catches_sigquit)
		return -ENOTSUP;
	if ((r = create_trigger(t, trigger, sizeof(trigger))))
		return r;
	if (pidfd_signal(t->pid_fd, SIGQUIT)) {
		r = -errno;
		if (trigger[0])
			unlink(trigger);
		return r;
	}
	r = -ETIMEDOUT;
	while (now_ms() < deadline) {
		if (is_socket(sock)) {
			r = 0;
			break;
		}
		poll(NULL, 0, SOCKET_POLL_MS);
	}
	if (trigger[0])
		unlink(trigger);
	return r;
}

/* Send the command and read the first line of the reply. */
static int run_command(const struct sockaddr_un *sa, long long deadline)
{
	static const char request[] = "1\0jcmd\0Compiler.perfmap\0\0"; /* and the literal's own NUL */
	char reply[REPLY_MAX];
	size_t got = 0;
	int fd, r = 0;

	/* Non-blocking: a JVM whose listener's backlog is full makes connect() fail, not wait. */
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) ||
	    write(fd, request, sizeof(request)) != (ssize_t)sizeof(request)) {
		r = -errno;
		goto out;
	}
	while (got < sizeof(reply) - 1 && !memchr(reply, '\n', got)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long long left = deadline - now_ms();
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			r = -ETIMEDOUT;
			goto out;
		}
		if ((n = read(fd, reply + got, sizeof(reply) - 1 - got)) < 0 && errno == EAGAIN)
			continue;
		if (n <= 0) {
			r = n ? -errno : -EPROTO;
			goto out;
		}
		got += (size_t)n;
	}
	reply[got] = 0;
	r = reply[0] == '0' && (reply[1] == '\n' || !reply[1]) ? 0 : -EPROTO;
out:
	close(fd);
	return r;
}

int jvm_attach_perfmap(const struct jvm_attach_target *t, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	struct sockaddr_un sa;
	int r;

	if ((r = socket_path(&sa, t)))
		return r;
	if (!is_socket(sa.sun_path) && (r = start_listener(t, sa.sun_path, deadline)))
		return r;
	return run_command(&sa, deadline);
}
