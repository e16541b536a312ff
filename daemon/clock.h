/* SPDX-License-Identifier: Apache-2.0 */
/* A clock's time in nanoseconds, the one unit the daemon's timers, deadlines and CPU figures use. */
#ifndef OTELPROFD_CLOCK_H
#define OTELPROFD_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif
