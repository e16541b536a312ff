/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/PID/stat's start time: with the pid, it tells a process from the next one to take the pid.
 * The daemon (process table) and the symbolizer (maps re-read only for the same process) use it.
 */
#ifndef OTELPROF_PROC_STAT_H
#define OTELPROF_PROC_STAT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* starttime, field 22 (clock ticks since boot), of a stat file's text. 0, or -EINVAL when malformed. */
int proc_stat_parse_start_ticks(const char *text, uint64_t *ticks);
/* The same, read from PROC_ROOT/PID/stat. 0, -ESRCH when it cannot be read (gone), or -EINVAL. */
int proc_stat_start_ticks(const char *proc_root, pid_t pid, uint64_t *ticks);
/* Nanoseconds in a clock tick (sysconf(_SC_CLK_TCK)): start times in ns are ticks times this. */
uint64_t proc_stat_tick_ns(void);
/* An exact start time (CLOCK_BOOTTIME ns, as the BPF records give it) and a start read from /proc
 * (clock ticks) name the same process start: equal at tick precision. */
bool proc_stat_same_start(uint64_t start_ns, uint64_t start_ticks);

#endif
