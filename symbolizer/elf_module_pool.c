// SPDX-License-Identifier: Apache-2.0
/* A module's string pool: demangled names and file paths kept once each, bounded. */
#include "elf_module_internal.h"

#include <stdlib.h>
#include <string.h>

/* Demangled names kept per module; past this, frames keep the mangled name. */
#define MAX_POOL_BYTES (8u << 20)
#define POOL_CHUNK 16384

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* A module-owned copy of s, or NULL when the pool is full or memory runs out. */
const char *elf_module__pool_intern(struct elf_module *m, const char *s)
{
	size_t len = strlen(s) + 1, i;
	char *copy;

	if (m->set_count * 2 >= m->nset) {
		size_t nset = m->nset ? m->nset * 2 : 256;
		const char **set = calloc(nset, sizeof(*set));

		if (!set)
			return NULL;
		for (size_t j = 0; j < m->nset; j++) {
			if (!m->set[j])
				continue;
			for (i = hash_str(m->set[j]) & (nset - 1); set[i]; i = (i + 1) & (nset - 1))
				;
			set[i] = m->set[j];
		}
		m->own_bytes += (nset - m->nset) * sizeof(*set);
		free(m->set);
		m->set = set;
		m->nset = nset;
	}
	for (i = hash_str(s) & (m->nset - 1); m->set[i]; i = (i + 1) & (m->nset - 1))
		if (!strcmp(m->set[i], s))
			return m->set[i];
	if (m->pool_bytes + len > MAX_POOL_BYTES)
		return NULL;
	if (!m->chunks || m->chunks->size - m->chunks->used < len) {
		size_t size = len > POOL_CHUNK ? len : POOL_CHUNK;
		struct pool_chunk *c = malloc(sizeof(*c) + size);

		if (!c)
			return NULL;
		c->next = m->chunks;
		c->used = 0;
		c->size = size;
		m->chunks = c;
		m->own_bytes += sizeof(*c) + size;
	}
	copy = m->chunks->data + m->chunks->used;
	memcpy(copy, s, len);
	m->chunks->used += len;
	m->pool_bytes += len;
	m->set[i] = copy;
	m->set_count++;
	return copy;
}
