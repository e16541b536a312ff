#include "perf_map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct perf_map {
	struct perf_map_sym *syms;
	size_t count;
	size_t malformed;
};

struct entry {
	struct perf_map_sym sym;
	size_t order; /* line number: later lines replace earlier ones (recompiled code) */
};

static int by_start(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->sym.start != y->sym.start)
		return x->sym.start < y->sym.start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

struct perf_map *perf_map_parse(FILE *f)
{
	struct perf_map *m = calloc(1, sizeof(*m));
	struct entry *entries = NULL;
	size_t n = 0, cap = 0, linecap = 0;
	char *line = NULL;

	if (!m)
		return NULL;
	while (getline(&line, &linecap, f) > 0) {
		char *p = line, *end, *name;
		uint64_t start, size;

		start = strtoull(p, &end, 16);
		if (end == p || *end != ' ')
			goto bad;
		p = end + 1;
		size = strtoull(p, &end, 16);
		if (end == p || *end != ' ' || size == 0 || start + size < start)
			goto bad;
		name = end + 1;
		name[strcspn(name, "\n")] = 0;
		if (!*name)
			goto bad;
		if (strlen(name) > PERF_MAP_MAX_NAME)
			name[PERF_MAP_MAX_NAME] = 0;
		if (n == PERF_MAP_MAX_SYMBOLS)
			goto bad;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct entry *ne = realloc(entries, ncap * sizeof(*ne));

			if (!ne)
				goto fail;
			entries = ne;
			cap = ncap;
		}
		entries[n].sym = (struct perf_map_sym){ .start = start, .size = size, .name = strdup(name) };
		entries[n].order = n;
		if (!entries[n].sym.name)
			goto fail;
		n++;
		continue;
bad:
		m->malformed++;
	}
	free(line);
	line = NULL;
	if (n) {
		qsort(entries, n, sizeof(*entries), by_start);
		m->syms = malloc(n * sizeof(*m->syms));
		if (!m->syms)
			goto fail;
		/* Same start twice: keep the last line written. */
		for (size_t i = 0; i < n; i++) {
			if (i + 1 < n && entries[i + 1].sym.start == entries[i].sym.start) {
				free((char *)entries[i].sym.name);
				continue;
			}
			m->syms[m->count++] = entries[i].sym;
		}
	}
	free(entries);
	return m;

fail:
	free(line);
	for (size_t i = 0; i < n; i++)
		free((char *)entries[i].sym.name);
	free(entries);
	perf_map_free(m);
	errno = ENOMEM;
	return NULL;
}

void perf_map_free(struct perf_map *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->count; i++)
		free((char *)m->syms[i].name);
	free(m->syms);
	free(m);
}

const struct perf_map_sym *perf_map_lookup(const struct perf_map *m, uint64_t address)
{
	size_t lo = 0, hi;

	if (!m || !m->count || address < m->syms[0].start)
		return NULL;
	hi = m->count;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].start <= address)
			lo = mid;
		else
			hi = mid;
	}
	return address - m->syms[lo].start < m->syms[lo].size ? &m->syms[lo] : NULL;
}

size_t perf_map_count(const struct perf_map *m)
{
	return m ? m->count : 0;
}

size_t perf_map_malformed(const struct perf_map *m)
{
	return m ? m->malformed : 0;
}
