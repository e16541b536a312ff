// SPDX-License-Identifier: Apache-2.0
#include "ops/loop_fds.h"

#include "ops/signals.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

int loop_fds_arm(int timerfd, uint64_t ns)
{
	struct itimerspec its = {
		.it_value = { .tv_sec = (time_t)(ns / 1000000000ULL), .tv_nsec = (long)(ns % 1000000000ULL) },
	};

	return timerfd_settime(timerfd, 0, &its, NULL) ? -errno : 0;
}

static int add_epoll(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* A timer expiring once, ns from now, watched by the epoll set: its fd in *fd. 0 or -errno. */
static int add_timer(int epfd, uint64_t ns, int *fd)
{
	int r;

	*fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (*fd < 0)
		return -errno;
	if ((r = loop_fds_arm(*fd, ns)) || (r = add_epoll(epfd, *fd)))
		return r;
	return 0;
}

int loop_fds_open(struct loop_fds *fds, int ringfd, uint64_t duration_ns, uint64_t interval_ns)
{
	sigset_t mask;
	int r;

	*fds = (struct loop_fds){ .epfd = -1, .sigfd = -1, .timerfd = -1, .intervalfd = -1 };
	signals_handled(&mask);
	fds->epfd = epoll_create1(EPOLL_CLOEXEC);
	fds->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fds->epfd < 0 || fds->sigfd < 0)
		return -errno;
	if ((r = add_epoll(fds->epfd, fds->sigfd)) || (r = add_epoll(fds->epfd, ringfd)))
		return r;
	if (duration_ns && (r = add_timer(fds->epfd, duration_ns, &fds->timerfd)))
		return r;
	if (interval_ns && (r = add_timer(fds->epfd, interval_ns, &fds->intervalfd)))
		return r;
	return 0;
}

int loop_fds_add(struct loop_fds *fds, int fd)
{
	return add_epoll(fds->epfd, fd);
}

void loop_fds_close(struct loop_fds *fds)
{
	int *all[] = { &fds->timerfd, &fds->intervalfd, &fds->sigfd, &fds->epfd };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (*all[i] >= 0)
			close(*all[i]);
		*all[i] = -1;
	}
}
