/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The event loop's file descriptors: one epoll set over the signalfd of the handled signals
 * (ops/signals.h), the BPF ring buffer, and the timers of the run's end and of the next export.
 * loop_fds_open() makes them; loop_fds_close() closes what it made (not the ring buffer's).
 */
#ifndef OTELPROFD_LOOP_FDS_H
#define OTELPROFD_LOOP_FDS_H

#include <stdint.h>

struct loop_fds {
	int epfd;       /* what the loop waits on */
	int sigfd;      /* reads signals_handled(), which signals_block() blocked */
	int timerfd;    /* expires at the run's end, or -1 (no duration) */
	int intervalfd; /* expires at the next export, or -1 (no collector) */
};

/* Watch ringfd and the signals; a run's end timer when duration_ns, an export timer when
 * interval_ns (0: none). 0 or -errno; loop_fds_close() is due either way. */
int loop_fds_open(struct loop_fds *fds, int ringfd, uint64_t duration_ns, uint64_t interval_ns);
/* Watch one more fd (its events are the caller's to read). 0 or -errno. */
int loop_fds_add(struct loop_fds *fds, int fd);
/* Arm a timer to expire once, ns from now. 0 or -errno. */
int loop_fds_arm(int timerfd, uint64_t ns);
void loop_fds_close(struct loop_fds *fds);

#endif
