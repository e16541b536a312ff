// SPDX-License-Identifier: Apache-2.0
/* The samples a turn's open deadline put off, handled again at the next turn (record_replay.h). */
#include "sampling/record_replay.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct replay_entry {
	void *data;
	size_t size;
	unsigned tries;
};

struct record_replay {
	struct replay_entry entries[RECORD_REPLAY_MAX]; /* a ring: first at head */
	size_t head, count;
};

struct record_replay *record_replay_new(void)
{
	return calloc(1, sizeof(struct record_replay));
}

void record_replay_free(struct record_replay *q)
{
	void *data;
	size_t size;
	unsigned tries;

	while (q && record_replay_pop(q, &data, &size, &tries))
		free(data);
	free(q);
}

int record_replay_push(struct record_replay *q, const void *data, size_t size, unsigned tries)
{
	struct replay_entry *e;
	void *copy;

	if (q->count == RECORD_REPLAY_MAX)
		return -ENOSPC;
	copy = malloc(size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, size);
	e = &q->entries[(q->head + q->count++) % RECORD_REPLAY_MAX];
	*e = (struct replay_entry){ .data = copy, .size = size, .tries = tries };
	return 0;
}

bool record_replay_pop(struct record_replay *q, void **data, size_t *size, unsigned *tries)
{
	struct replay_entry *e;

	if (!q->count)
		return false;
	e = &q->entries[q->head];
	*data = e->data;
	*size = e->size;
	*tries = e->tries;
	q->head = (q->head + 1) % RECORD_REPLAY_MAX;
	q->count--;
	return true;
}

size_t record_replay_count(const struct record_replay *q)
{
	return q->count;
}
