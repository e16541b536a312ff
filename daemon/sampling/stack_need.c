// SPDX-License-Identifier: Apache-2.0
#include "sampling/stack_need.h"

bool stack_need_cut(const struct unwind_sample_extent *e)
{
	/* An empty window is not cut: its first read failed (a page not present, an exec under way). */
	return e->whole && e->end > e->sp && e->end % STACK_NEED_PAGE;
}

/* Room in this second's budget for one more change (counted when none). */
static bool within_budget(struct stack_need *n, uint64_t now_ns)
{
	if (now_ns / 1000000000ULL != n->second) {
		n->second = now_ns / 1000000000ULL;
		n->spent = 0;
	}
	if (n->spent >= STACK_NEED_PER_SECOND) {
		n->counters->over_budget++;
		return false;
	}
	n->spent++;
	return true;
}

/* Set (or set again) tid's top: 0, or -1 when not done (counted). */
static int set_top(struct stack_need *n, uint32_t tid, uint64_t window_end, uint64_t top, uint64_t now_ns)
{
	unsigned slot = tid % STACK_NEED_RECENT;

	if (!within_budget(n, now_ns))
		return -1;
	if (n->set(n->ctx, tid, window_end, top, now_ns)) {
		n->counters->refused++;
		return -1;
	}
	n->recent[slot].tid = tid;
	n->recent[slot].set_ns = now_ns;
	n->recent[slot].withdrawn_ns = 0;
	return 0;
}

void stack_need_update(struct stack_need *n, uint32_t tid, uint64_t time_ns, const struct unwind_sample_extent *e)
{
	unsigned slot = tid % STACK_NEED_RECENT;
	bool recent = n->recent[slot].tid == tid;
	uint64_t top;

	if (!n->set || !e->end || !e->whole)
		return;
	if (stack_need_cut(e)) {
		if (e->failed) {
			/* Cut too short: the next windows go to the mapping's end (once: the thread's
			 * other samples already read may have failed too). */
			if (recent && n->recent[slot].withdrawn_ns)
				return;
			if (within_budget(n, time_ns)) {
				if (n->set(n->ctx, tid, 0, 0, time_ns))
					n->counters->refused++;
				else
					n->counters->withdrawn++;
			}
			n->recent[slot].tid = tid;
			n->recent[slot].withdrawn_ns = time_ns;
		} else if (recent && !n->recent[slot].withdrawn_ns &&
			   time_ns > n->recent[slot].set_ns + STACK_NEED_TTL_NS / 2 &&
			   !set_top(n, tid, e->end, e->end, time_ns)) {
			n->counters->refreshed++;
		}
		return;
	}
	/* A whole window up to the mapping's end, walked to the entry well below it. */
	if (!e->needed || e->needed < e->sp || e->needed > e->end)
		return;
	/* Set within its hold after this sample was taken (it waited in the ring buffer). */
	if (recent && time_ns < n->recent[slot].set_ns + STACK_NEED_TTL_NS)
		return;
	if (recent && n->recent[slot].withdrawn_ns && time_ns < n->recent[slot].withdrawn_ns + STACK_NEED_BACKOFF_NS) {
		n->counters->backed_off++;
		return;
	}
	/* Sampled seldom: its top would lapse before it is used. */
	if (!recent || !n->recent[slot].seen_ns || time_ns > n->recent[slot].seen_ns + STACK_NEED_TTL_NS) {
		n->recent[slot] = (struct stack_need_recent){ .tid = tid, .seen_ns = time_ns };
		return;
	}
	n->recent[slot].seen_ns = time_ns;
	top = (e->needed + STACK_NEED_SLACK + 7) & ~7ULL;
	if (top % STACK_NEED_PAGE == 0)
		top += 8;
	if (top + STACK_NEED_SLACK < e->end && !set_top(n, tid, e->end, top, time_ns))
		n->counters->set++;
}
