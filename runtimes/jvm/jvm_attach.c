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

/* The line of /proc/PID/status that starts with field ("SigCgt:") into line; false when none. */
static bool status_line(pid_t pid, const char *field, char *line, size_t size)
{
	char path[64];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (!(f = fopen(path, "re")))
		return false;
	while (!found && fgets(line, (int)size, f))
		found = !strncmp(line, field, strlen(field));
	fclose(f);
	return found;
}

/* The process catches SIGQUIT (SigCgt): HotSpot's handler starts the attach listener; without one,
 * SIGQUIT kills the process. */
static bool catches_sigquit(pid_t pid)
{
	char line[256];
	unsigned long long mask = 0;

	return status_line(pid, "SigCgt:", line, sizeof(line)) && sscanf(line, "SigCgt: %llx", &mask) == 1 &&
	       (mask & (1ULL << (SIGQUIT - 1)));
}

pid_t jvm_attach_ns_pid(pid_t pid)
{
	char line[256], *last;
	pid_t ns;

	if (!status_line(pid, "NSpid:", line, sizeof(line)) || !(last = strrchr(line, '\t')))
		return pid;
	ns = (pid_t)atoi(last + 1);
	return ns > 0 ? ns : pid;
}

static int socket_path(struct sockaddr_un *sa, pid_t pid, pid_t nspid)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/%d/root/tmp/.java_pid%d", pid, nspid);
	return n > 0 && (size_t)n < sizeof(sa->sun_path) ? 0 : -ENAMETOOLONG;
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
static int create_trigger(pid_t pid, pid_t nspid, char *trigger, size_t size)
{
	int fd;

	snprintf(trigger, size, "/proc/%d/root/tmp/.attach_pid%d", pid, nspid);
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
static int start_listener(pid_t pid, pid_t nspid, const char *sock, long long deadline)
{
	char trigger[128];
	int r;

	if (!catches_sigquit(pid))
		return -ENOTSUP;
	if ((r = create_trigger(pid, nspid, trigger, sizeof(trigger))))
		return r;
	if (kill(pid, SIGQUIT)) {
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

int jvm_attach_perfmap(pid_t pid, pid_t nspid, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	struct sockaddr_un sa;
	int r;

	if ((r = socket_path(&sa, pid, nspid)))
		return r;
	if (!is_socket(sa.sun_path) && (r = start_listener(pid, nspid, sa.sun_path, deadline)))
		return r;
	return run_command(&sa, deadline);
}
