/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Off-CPU and allocation stacks put off to a later turn (record_path.c, like on-CPU samples: a module
 * their unwinding needed was still opening), and the records that close them. Such a stack is
 * paired with a later record: a switch-out's with its end (the thread's id, the switch-out time), an
 * allocation's with its free (the process's id, the address). When the closing record is read while
 * its stack is put off, it is held here and handled right after the stack, so neither waits for the
 * other in the loop and the pair never comes apart; a stack read while an older one of the same key
 * (thread, or process and address) is put off is put off behind it, so they keep their order.
 * Bounded by RECORD_REPLAY_MAX entries (one per stack put off). The table owns the held records.
 */
#ifndef OTELPROFD_STACK_PARK_H
#define OTELPROFD_STACK_PARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "records.h"
#include "sampling/record_replay.h"

/* A closing record held: the larger of an off-CPU end and a free. */
union stack_closing {
	struct otelprof_off_cpu_end end;
	struct otelprof_free free;
};

/* Which pair: the stack's record kind (OTELPROF_RECORD_OFF_CPU or OTELPROF_RECORD_ALLOC), its
 * thread (off-CPU) or process (allocation), and the switch-out time or the address. */
struct stack_park_key {
	uint32_t kind, id;
	uint64_t at;
};

struct stack_park {
	struct {
		struct stack_park_key key;
		bool closed;                  /* its closing record is held */
		union stack_closing closing;
	} entries[RECORD_REPLAY_MAX];
	size_t count;
};

/* The pair of an off-CPU record or end, or an allocation or free (its size checked by the caller). */
struct stack_park_key stack_park_key_of(const void *record);
/* A stack put off: 0, or -ENOSPC (full: it is handled now). closing: held already (NULL: none). */
int stack_park_add(struct stack_park *p, const struct stack_park_key *key, const union stack_closing *closing);
/* A stack of this kind and id (any time or address when any_at) is put off. */
bool stack_park_has(const struct stack_park *p, const struct stack_park_key *key, bool any_at);
/* The closing record of key's stack, read while the stack is put off: held (true), or false when no
 * stack of key waits for one (handle it now). */
bool stack_park_close(struct stack_park *p, const struct stack_park_key *key, const union stack_closing *closing);
/* The stack of key is handled again: its entry removed; true with *closing when one was held. */
bool stack_park_take(struct stack_park *p, const struct stack_park_key *key, union stack_closing *closing);

#endif
