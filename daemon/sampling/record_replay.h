/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Samples whose handling met the loop turn's open deadline (a module they needed was not opened:
 * symbolizer_set_open_deadline()), kept as copies to be handled again at the next turn, with a
 * fresh budget: the time bound of a turn delays such a sample, it does not unwind it worse.
 * A FIFO of at most RECORD_REPLAY_MAX copies; a sample is handled at most RECORD_REPLAY_TRIES
 * times (the last time as it comes). The queue owns its copies; record_replay_pop() hands one over.
 */
#ifndef OTELPROFD_RECORD_REPLAY_H
#define OTELPROFD_RECORD_REPLAY_H

#include <stdbool.h>
#include <stddef.h>

#define RECORD_REPLAY_MAX 256
#define RECORD_REPLAY_TRIES 8

struct record_replay;

struct record_replay *record_replay_new(void);
void record_replay_free(struct record_replay *q);
/* Keep a copy of the record; tries: the times it was handled. 0, -ENOSPC (full) or -ENOMEM. */
int record_replay_push(struct record_replay *q, const void *data, size_t size, unsigned tries);
/* The oldest copy (the caller frees *data), or false when there is none. */
bool record_replay_pop(struct record_replay *q, void **data, size_t *size, unsigned *tries);
size_t record_replay_count(const struct record_replay *q);

#endif
