// SPDX-License-Identifier: Apache-2.0
#include "profile/intern.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct intern_entry {
	uint64_t hash;
	size_t len;
	char *key;
};

struct intern {
	struct intern_entry *entries;
	size_t count, capacity, max_keys;
	uint32_t *slots; /* entry id + 1; 0 = empty */
	size_t nslots;   /* power of two */
};

static uint64_t hash_bytes(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a, then a final mix */

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	h ^= h >> 31;
	h *= 0x7fb5d329728ea185ULL;
	return h ^ (h >> 27);
}

struct intern *intern_new(size_t max_keys)
{
	struct intern *t = calloc(1, sizeof(*t));

	if (t)
		t->max_keys = max_keys;
	return t;
}

void intern_free(struct intern *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->count; i++)
		free(t->entries[i].key);
	free(t->entries);
	free(t->slots);
	free(t);
}

static int rehash(struct intern *t)
{
	size_t n = t->nslots ? t->nslots * 2 : 256, mask = n - 1;
	uint32_t *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->count; i++) {
		size_t s = t->entries[i].hash & mask;

		while (slots[s])
			s = (s + 1) & mask;
		slots[s] = (uint32_t)i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = n;
	return 0;
}

static int64_t lookup(const struct intern *t, const void *key, size_t len, uint64_t h, size_t *slot)
{
	size_t mask, s;

	if (!t->nslots)
		return -ENOENT;
	mask = t->nslots - 1;
	for (s = h & mask; t->slots[s]; s = (s + 1) & mask) {
		const struct intern_entry *e = &t->entries[t->slots[s] - 1];

		if (e->hash == h && e->len == len && !memcmp(e->key, key, len))
			return t->slots[s] - 1;
	}
	if (slot)
		*slot = s;
	return -ENOENT;
}

int64_t intern_find(const struct intern *t, const void *key, size_t len)
{
	return lookup(t, key, len, hash_bytes(key, len), NULL);
}

int64_t intern_put(struct intern *t, const void *key, size_t len, int *added)
{
	uint64_t h = hash_bytes(key, len);
	struct intern_entry *e;
	size_t slot = 0;
	int64_t id;

	if (added)
		*added = 0;
	id = lookup(t, key, len, h, &slot);
	if (id >= 0)
		return id;
	if (t->count >= t->max_keys || t->count >= UINT32_MAX - 1)
		return -ENOSPC;
	if ((t->count + 1) * 10 >= t->nslots * 7) {
		if (rehash(t))
			return -ENOMEM;
		lookup(t, key, len, h, &slot);
	}
	if (t->count == t->capacity) {
		size_t cap = t->capacity ? t->capacity * 2 : 64;
		struct intern_entry *grown = realloc(t->entries, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		t->entries = grown;
		t->capacity = cap;
	}
	e = &t->entries[t->count];
	e->key = malloc(len ? len : 1);
	if (!e->key)
		return -ENOMEM;
	memcpy(e->key, key, len);
	e->len = len;
	e->hash = h;
	t->slots[slot] = (uint32_t)t->count + 1;
	if (added)
		*added = 1;
	return (int64_t)t->count++;
}

size_t intern_count(const struct intern *t)
{
	return t->count;
}

const void *intern_key(const struct intern *t, uint32_t id, size_t *len)
{
	if (id >= t->count)
		return NULL;
	if (len)
		*len = t->entries[id].len;
	return t->entries[id].key;
}
