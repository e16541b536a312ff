// SPDX-License-Identifier: Apache-2.0
/* The module cache's memory of what each module cost and how it was served (module_history.h). */
#include "module_history.h"

#include <string.h>

static uint64_t key_hash(const struct module_key *k)
{
	uint64_t h = 1469598103934665603ULL;

	if (k->build_id_len) {
		for (size_t i = 0; i < k->build_id_len; i++)
			h = (h ^ k->build_id[i]) * 1099511628211ULL;
		return h;
	}
	h = (h ^ k->dev) * 1099511628211ULL;
	return (h ^ k->inode) * 1099511628211ULL;
}

static bool key_equal(const struct module_key *a, const struct module_key *b)
{
	if (a->build_id_len || b->build_id_len)
		return a->build_id_len == b->build_id_len && !memcmp(a->build_id, b->build_id, a->build_id_len);
	return a->dev == b->dev && a->inode == b->inode;
}

struct module_history_entry *module_history_get(struct module_history *h, const struct module_key *key,
						uint64_t now, bool create)
{
	size_t sets = MODULE_HISTORY_SLOTS / MODULE_HISTORY_WAYS;
	struct module_history_entry *set = &h->entries[(key_hash(key) % sets) * MODULE_HISTORY_WAYS], *victim = set;

	for (size_t i = 0; i < MODULE_HISTORY_WAYS; i++) {
		struct module_history_entry *e = &set[i];

		if (e->used && key_equal(&e->key, key)) {
			e->touched_ns = now;
			return e;
		}
		if (!e->used ? victim->used : victim->used && e->touched_ns < victim->touched_ns)
			victim = e;
	}
	if (!create)
		return NULL;
	if (victim->used)
		h->dropped++;
	*victim = (struct module_history_entry){ .key = *key, .used = true, .touched_ns = now };
	if (key->build_id_len > sizeof(victim->key.build_id))
		victim->key.build_id_len = sizeof(victim->key.build_id);
	return victim;
}

enum module_tier module_history_decide(const struct module_history_entry *e, uint64_t now,
				       enum module_tier_reason *reason)
{
	*reason = MODULE_REASON_NONE;
	if (!e || e->demoted == MODULE_REASON_NONE)
		return MODULE_TIER_FULL;
	if (e->demoted != MODULE_REASON_TOO_BIG && now - e->demoted_ns >= MODULE_HISTORY_COOLDOWN_NS)
		return MODULE_TIER_FULL; /* long enough ago: worth one more full open */
	*reason = e->demoted;
	return MODULE_TIER_SYMBOLS;
}

bool module_history_must_fit(const struct module_history_entry *e, uint64_t now)
{
	return e && e->symbols_evicted_ns && now - e->symbols_evicted_ns < MODULE_HISTORY_COOLDOWN_NS;
}

static void demote(struct module_history_entry *e, enum module_tier_reason reason, uint64_t now)
{
	if (e->demoted == MODULE_REASON_TOO_BIG)
		return; /* the strongest: it stays */
	e->demoted = reason;
	e->demoted_ns = now;
}

void module_history_opened(struct module_history_entry *e, enum module_tier tier, enum module_tier_reason reason,
			   uint64_t bytes, uint64_t open_ns, uint64_t now)
{
	e->opens++;
	e->tier = tier;
	e->reason = tier == MODULE_TIER_FULL ? MODULE_REASON_NONE : reason;
	e->bytes = bytes;
	if (bytes > e->peak_bytes)
		e->peak_bytes = bytes;
	e->open_ns = open_ns;
	if (tier == MODULE_TIER_FULL && open_ns > MODULE_HISTORY_SLOW_OPEN_NS)
		demote(e, MODULE_REASON_SLOW, now);
	else if (tier == MODULE_TIER_SYMBOLS && reason == MODULE_REASON_TOO_BIG)
		demote(e, MODULE_REASON_TOO_BIG, now);
}

void module_history_measured(struct module_history_entry *e, uint64_t bytes, uint64_t cap)
{
	if (bytes > e->peak_bytes)
		e->peak_bytes = bytes;
	if (e->tier == MODULE_TIER_FULL && bytes > cap)
		demote(e, MODULE_REASON_TOO_BIG, e->touched_ns);
}

void module_history_evicted(struct module_history_entry *e, uint64_t now, uint64_t cheap_bytes)
{
	if (e->tier != MODULE_TIER_FULL) {
		e->symbols_evicted_ns = now;
		return;
	}
	e->evictions++;
	if (e->peak_bytes >= cheap_bytes || e->open_ns >= MODULE_HISTORY_CHEAP_OPEN_NS)
		demote(e, MODULE_REASON_THRASH, now);
}

const char *module_history_reason_name(enum module_tier_reason reason)
{
	switch (reason) {
	case MODULE_REASON_TOO_BIG:
		return "its debug info is larger than its share of the symbol cache";
	case MODULE_REASON_THRASH:
		return "it left the full symbol cache and was needed again soon after";
	case MODULE_REASON_SLOW:
		return "opening it with its debug info took too long";
	case MODULE_REASON_NONE:
		break;
	}
	return "full";
}
