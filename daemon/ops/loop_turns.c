// SPDX-License-Identifier: Apache-2.0
#include "ops/loop_turns.h"

#include <string.h>

#include "ops/self_metrics.h"

const unsigned loop_turn_range_ms[LOOP_TURN_RANGES - 1] = { 10, 25, 50, 75, LOOP_TURN_BOUND_MS };

void loop_turns_phase(struct loop_turns *t, enum loop_phase phase, uint64_t now)
{
	if (!t->start_ns)
		return;
	t->phase_ns[t->phase] += now - t->phase_start_ns;
	t->phase_start_ns = now;
	t->phase = phase;
}

void loop_turns_end(struct loop_turns *t, uint64_t now, uint64_t cpu_ns)
{
	uint64_t took, cpu = cpu_ns > t->start_cpu_ns ? cpu_ns - t->start_cpu_ns : 0;
	size_t range = 0;

	if (!t->start_ns)
		return;
	loop_turns_phase(t, LOOP_PHASE_OTHER, now);
	took = now - t->start_ns;
	t->start_ns = 0;
	if (t->dropped_turn) {
		enum loop_phase longest = LOOP_PHASE_OTHER;

		for (int p = 0; p < LOOP_PHASES; p++)
			if (t->phase_ns[p] > t->phase_ns[longest])
				longest = (enum loop_phase)p;
		t->dropped_in[longest] += t->dropped_turn;
		if (took > LOOP_TURN_BOUND_MS * 1000000ULL)
			t->dropped_long += t->dropped_turn;
		t->dropped_turn = 0;
	}
	if (took > t->max_ns) {
		t->max_ns = took;
		t->max_cpu_ns = cpu;
		memcpy(t->max_phase_ns, t->phase_ns, sizeof(t->phase_ns));
	}
	if (cpu > t->max_cpu_turn_ns)
		t->max_cpu_turn_ns = cpu;
	if (took > LOOP_TURN_BOUND_MS * 1000000ULL)
		t->over_bound++;
	while (range < LOOP_TURN_RANGES - 1 && took >= loop_turn_range_ms[range] * 1000000ULL)
		range++;
	t->in_range[range]++;
}

void loop_turns_begin(struct loop_turns *t, uint64_t now, uint64_t cpu_ns)
{
	loop_turns_end(t, now, cpu_ns);
	t->start_ns = t->phase_start_ns = now ? now : 1;
	t->start_cpu_ns = cpu_ns;
	t->phase = LOOP_PHASE_OTHER;
	memset(t->phase_ns, 0, sizeof(t->phase_ns));
}

void loop_turns_dropped(struct loop_turns *t, uint64_t dropped)
{
	uint64_t more = dropped > t->dropped_last ? dropped - t->dropped_last : 0;

	if (!t->dropped_seen)
		t->dropped_at_start = dropped;
	else if (t->start_ns)
		t->dropped_turn += more;
	else
		t->dropped_between += more;
	t->dropped_seen = true;
	t->dropped_last = dropped;
}

void loop_turns_read(struct loop_turns *t, uint64_t now)
{
	if (t->last_read_ns && now - t->last_read_ns > t->read_gap_max_ns)
		t->read_gap_max_ns = now - t->last_read_ns;
	t->last_read_ns = now;
}

const char *loop_phase_name(enum loop_phase phase)
{
	static const char *const names[LOOP_PHASES] = { "other", "replay", "read", "build" };

	return phase < LOOP_PHASES ? names[phase] : "?";
}
