// SPDX-License-Identifier: Apache-2.0
#include "kallsyms.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct kallsyms {
	struct ksym *syms;
	size_t count;
	char *strings;   /* every name and module name, NUL-terminated, back to back */
	bool hidden;
};

/* Growing string pool; offsets stay valid across growth, pointers are made once it is final. */
struct pool {
	char *data;
	size_t len, cap;
};

static int by_address(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->address < y->address ? -1 : x->address > y->address;
}

/* Markers of the end of the kernel's text: an address at or past one is not the marker's. */
static bool is_end_marker(const char *name)
{
	return !strcmp(name, "_etext") || !strcmp(name, "_einittext");
}

static bool is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

/* Offset of a copy of text in the pool, or SIZE_MAX when out of memory. */
static size_t pool_add(struct pool *p, const char *text)
{
	size_t n = strlen(text) + 1, at = p->len;

	if (p->cap - p->len < n) {
		size_t ncap = p->cap ? p->cap * 2 : 1 << 20;
		char *nd;

		while (ncap - p->len < n)
			ncap *= 2;
		nd = realloc(p->data, ncap);
		if (!nd)
			return SIZE_MAX;
		p->data = nd;
		p->cap = ncap;
	}
	memcpy(p->data + at, text, n);
	p->len += n;
	return at;
}

const char kallsyms_vmlinux[] = "vmlinux";

/* Hex digits at *p (advanced past them); false when there are none or too many. */
static bool parse_hex(const char **p, const char *end, uint64_t *value)
{
	const char *q = *p;
	uint64_t v = 0;

	for (; q < end && q - *p <= 16; q++) {
		unsigned d;

		if (*q >= '0' && *q <= '9')
			d = (unsigned)(*q - '0');
		else if ((*q | 0x20) >= 'a' && (*q | 0x20) <= 'f')
			d = (unsigned)((*q | 0x20) - 'a' + 10);
		else
			break;
		v = v << 4 | d;
	}
	if (q == *p || q - *p > 16)
		return false;
	*p = q;
	*value = v;
	return true;
}

struct parse_state {
	struct kallsyms *k;
	struct pool pool;
	size_t cap, seen, zero, last_module;
	bool sorted;
};

/* One line, [line, end) without its newline (modified in place). 0, or -ENOMEM. */
static int parse_line(struct parse_state *st, char *line, char *end)
{
	const char *p = line;
	char type, *name, *module;
	size_t name_at, module_at = SIZE_MAX;
	uint64_t address;

	if (!parse_hex(&p, end, &address) || end - p < 3 || p[0] != ' ' || p[2] != ' ')
		return 0;
	type = p[1];
	st->seen++;
	if (address == 0)
		st->zero++;
	if (!is_text(type))
		return 0;
	name = line + (p + 3 - line);
	*end = 0;
	module = memchr(name, '\t', (size_t)(end - name));
	if (module) {
		*module++ = 0;
		if (*module == '[')
			module++;
		module[strcspn(module, "]")] = 0;
	}
	if (!*name)
		return 0;
	if (st->k->count == st->cap) {
		size_t ncap = st->cap ? st->cap * 2 : 4096;
		struct ksym *ns = realloc(st->k->syms, ncap * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		st->k->syms = ns;
		st->cap = ncap;
	}
	name_at = pool_add(&st->pool, name);
	if (name_at == SIZE_MAX)
		return -ENOMEM;
	if (module) {
		/* A module's symbols come together: its name is kept once per run of them. */
		if (st->last_module != SIZE_MAX && !strcmp(st->pool.data + st->last_module, module))
			module_at = st->last_module;
		else if ((module_at = st->last_module = pool_add(&st->pool, module)) == SIZE_MAX)
			return -ENOMEM;
	}
	if (st->k->count && address < st->k->syms[st->k->count - 1].address)
		st->sorted = false;
	/* Offsets for now: the pool may still move. */
	st->k->syms[st->k->count++] = (struct ksym){
		.address = address, .name = (const char *)(uintptr_t)name_at,
		.module = module ? (const char *)(uintptr_t)module_at : NULL,
		.end = !module && is_end_marker(name) ? address : 0,
	};
	return 0;
}

/*
 * One allocation for all the names rather than one per symbol: a kernel has over 100,000 of them, and
 * per-symbol mallocs cost more time and memory (allocator headers) than the names. The text is read in
 * large blocks and parsed in place; a line longer than the block is skipped.
 */
struct kallsyms *kallsyms_parse(FILE *f)
{
	enum { BLOCK = 64 << 10 };
	struct parse_state st = { .last_module = SIZE_MAX, .sorted = true };
	char *buf = malloc(BLOCK + 1);
	size_t have = 0, n;
	bool skipping = false; /* inside a line too long for the block */

	st.k = calloc(1, sizeof(*st.k));
	if (!st.k || !buf)
		goto fail;
	while ((n = fread(buf + have, 1, BLOCK - have, f)) > 0 || have) {
		char *p = buf, *end = buf + have + n, *nl;
		bool eof = n == 0;

		while ((nl = memchr(p, '\n', (size_t)(end - p))) || (eof && p < end)) {
			if (!nl)
				nl = end;
			if (!skipping && parse_line(&st, p, nl))
				goto fail;
			skipping = false;
			p = nl + (nl < end);
		}
		have = (size_t)(end - p);
		if (have == BLOCK) { /* no newline in a whole block: drop it up to the next newline */
			have = 0;
			skipping = true;
		}
		memmove(buf, p, have);
		if (eof)
			break;
	}
	free(buf);
	st.k->strings = st.pool.data;
	for (size_t i = 0; i < st.k->count; i++) {
		struct ksym *sym = &st.k->syms[i];

		sym->name = st.k->strings + (uintptr_t)sym->name;
		sym->module = sym->module ? st.k->strings + (uintptr_t)sym->module : kallsyms_vmlinux;
	}
	st.k->hidden = st.seen > 0 && st.zero == st.seen;
	if (!st.sorted) /* the kernel's own symbols come sorted; modules and BPF may not */
		qsort(st.k->syms, st.k->count, sizeof(*st.k->syms), by_address);
	return st.k;

fail:
	free(buf);
	free(st.pool.data);
	kallsyms_free(st.k);
	errno = ENOMEM;
	return NULL;
}

struct kallsyms *kallsyms_load(const char *path)
{
	struct kallsyms *k;
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	k = kallsyms_parse(f);
	fclose(f);
	return k;
}

struct module_range {
	char name[64];
	uint64_t end;
};

int kallsyms_set_module_ranges(struct kallsyms *k, FILE *modules)
{
	struct module_range *ranges = NULL, *last = NULL;
	size_t n = 0, cap = 0, linecap = 0;
	char *line = NULL;
	int r = 0;

	if (!k)
		return 0;
	while (getline(&line, &linecap, modules) > 0) {
		unsigned long long size, start;
		char name[64];

		if (sscanf(line, "%63s %llu %*s %*s %*s %llx", name, &size, &start) != 3 || !start ||
		    start + size < start)
			continue; /* hidden (kptr_restrict shows 0) or malformed */
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct module_range *nr = realloc(ranges, ncap * sizeof(*nr));

			if (!nr) {
				r = -ENOMEM;
				goto out;
			}
			ranges = nr;
			cap = ncap;
		}
		memcpy(ranges[n].name, name, sizeof(name));
		ranges[n++].end = start + size;
	}
	/* A module's symbols are contiguous once sorted by address: the last match is tried first. */
	for (size_t i = 0; i < k->count; i++) {
		struct ksym *s = &k->syms[i];

		if (s->module == kallsyms_vmlinux || !strcmp(s->module, "bpf"))
			continue;
		if (!last || strcmp(last->name, s->module)) {
			last = NULL;
			for (size_t j = 0; j < n && !last; j++)
				if (!strcmp(ranges[j].name, s->module))
					last = &ranges[j];
		}
		if (last)
			s->end = last->end;
	}
out:
	free(ranges);
	free(line);
	return r;
}

void kallsyms_free(struct kallsyms *k)
{
	if (!k)
		return;
	free(k->strings);
	free(k->syms);
	free(k);
}

const struct ksym *kallsyms_lookup(const struct kallsyms *k, uint64_t address)
{
	size_t lo = 0, hi;

	if (!k || !k->count || k->hidden || address < k->syms[0].address)
		return NULL;
	hi = k->count;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].address <= address)
			lo = mid;
		else
			hi = mid;
	}
	if (k->syms[lo].end && address >= k->syms[lo].end)
		return NULL; /* past the end of the module or of the kernel's text */
	return &k->syms[lo];
}

size_t kallsyms_count(const struct kallsyms *k)
{
	return k ? k->count : 0;
}

bool kallsyms_hidden(const struct kallsyms *k)
{
	return k && k->hidden;
}
