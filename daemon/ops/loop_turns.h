/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The event loop's turns, timed (issue 27: signals and the deadline looked at at least every
 * LOOP_TURN_BOUND_MS): the longest, those over the bound, how many fell in each range of time, and
 * where the longest spent its time (reading the ring buffer, handling the records put off, building
 * an interval's profile, the rest). Pure bookkeeping on times the caller reads: no clock, no I/O.
 */
#ifndef OTELPROFD_LOOP_TURNS_H
#define OTELPROFD_LOOP_TURNS_H

#include <stdbool.h>
#include <stdint.h>

/* What a turn does, timed apart. */
enum loop_phase {
	LOOP_PHASE_OTHER,  /* signals, timers, the once-a-second tick, programs settling */
	LOOP_PHASE_REPLAY, /* records put off by an earlier turn (record_path_replay()) */
	LOOP_PHASE_READ,   /* the ring buffer's records */
	LOOP_PHASE_BUILD,  /* an interval's profile, built and handed to the exporter */
	LOOP_PHASES,
};

/* Upper bounds (ms) of the ranges turns are counted in; the last range has none. */
#define LOOP_TURN_RANGES 6
extern const unsigned loop_turn_range_ms[LOOP_TURN_RANGES - 1];

struct loop_turns {
	uint64_t start_ns;                    /* the current turn's start (0: none) */
	uint64_t start_cpu_ns;                /* ... the loop thread's CPU time then */
	uint64_t phase_start_ns;              /* ... and its current phase's */
	enum loop_phase phase;
	uint64_t phase_ns[LOOP_PHASES];       /* the current turn's time in each phase */
	uint64_t max_ns;                      /* the longest turn */
	uint64_t max_phase_ns[LOOP_PHASES];   /* ... its time in each phase */
	uint64_t max_cpu_ns;                  /* ... the CPU time the loop thread ran in it: the rest of
					         it was spent waiting for a CPU (or in a wait of its own) */
	uint64_t max_cpu_turn_ns;             /* the most CPU time the loop thread ran in one turn */
	uint64_t over_bound;                  /* turns over LOOP_TURN_BOUND_MS */
	uint64_t in_range[LOOP_TURN_RANGES];  /* turns by time: under loop_turn_range_ms[0], ... */
	/* Where the ring buffer's drops (its ring_buffer_full counter, looked at as each turn begins and
	 * ends: loop_turns_dropped()) happened: before the loop's first turn (the start), between turns
	 * (the loop waiting for records or a wakeup, or for a CPU), or in a turn, by its longest phase. */
	bool dropped_seen;                    /* the counter was looked at once */
	uint64_t dropped_last;                /* ... its value then */
	uint64_t dropped_turn;                /* ... of it, in the current turn so far */
	uint64_t dropped_at_start;            /* before the first turn */
	uint64_t dropped_between;             /* between turns */
	uint64_t dropped_in[LOOP_PHASES];     /* in turns, by the phase that took most of the turn */
	uint64_t dropped_long;                /* of those, in turns over LOOP_TURN_BOUND_MS */
	/* How long the ring buffer went unread (loop_turns_read()). */
	uint64_t last_read_ns;                /* the last read's start (0: none yet) */
	uint64_t read_gap_max_ns;             /* the longest time from one read's start to the next */
};

/* A turn begins at now, the loop thread's CPU time (CLOCK_THREAD_CPUTIME_ID) cpu_ns (the one before,
 * if any, ends then). */
void loop_turns_begin(struct loop_turns *t, uint64_t now, uint64_t cpu_ns);
/* From now the turn does phase. */
void loop_turns_phase(struct loop_turns *t, enum loop_phase phase, uint64_t now);
/* The turn ends at now, with the thread's CPU time cpu_ns (none begun: nothing). */
void loop_turns_end(struct loop_turns *t, uint64_t now, uint64_t cpu_ns);
/* The ring buffer's drop counter (a running total) is now dropped: what it gained since the last
 * look is put down to the turn under way, or between turns when none is. */
void loop_turns_dropped(struct loop_turns *t, uint64_t dropped);
/* A read of the ring buffer starts at now. */
void loop_turns_read(struct loop_turns *t, uint64_t now);
/* Words for a phase ("read", "replay", "build", "other"). */
const char *loop_phase_name(enum loop_phase phase);

#endif
