// SPDX-License-Identifier: Apache-2.0
#include "kallsyms.h"
#include "kallsyms_table.h"
#include "sort_u64.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Growing string pool; offsets stay valid across growth, pointers are made once it is final. */
struct pool {
	char *data;
	size_t len, cap;
};

/* Markers of the end of the kernel's text: an address at or past one is not the marker's. */
static bool is_end_marker(const char *name, size_t len)
{
	return (len == 6 && !memcmp(name, "_etext", 6)) || (len == 10 && !memcmp(name, "_einittext", 10));
}

static bool is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

/* Offset of a copy of text (len bytes, then a NUL) in the pool, or SIZE_MAX when out of memory. */
static size_t pool_add(struct pool *p, const char *text, size_t len)
{
	size_t n = len + 1, at = p->len;

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
	memcpy(p->data + at, text, len);
	p->data[at + len] = 0;
	p->len += n;
	return at;
}

const char kallsyms_vmlinux[] = "vmlinux";

/* A hex digit's value plus one; 0: not a hex digit. One load a digit: the addresses are half of
 * what is parsed (16 digits a line), and branching on ranges cost a third of the parse. */
static const unsigned char hex_value[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9,
	['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* The 16 hex digits at p (a 64-bit kernel's %px, every line there): no test a digit but its table
 * entry. False when one is not a digit. */
static bool parse_hex16(const char *p, uint64_t *value)
{
	uint64_t v = 0;
	unsigned bad = 0;

	for (int i = 0; i < 16; i++) {
		unsigned d = hex_value[(unsigned char)p[i]];

		bad |= d == 0;
		v = v << 4 | ((d - 1) & 15);
	}
	*value = v;
	return !bad;
}

/* Hex digits at *p (advanced past them); false when there are none or too many. */
static bool parse_hex(const char **p, const char *end, uint64_t *value)
{
	const char *q = *p;
	uint64_t v = 0;
	unsigned d;

	for (; q < end && q - *p <= 16 && (d = hex_value[(unsigned char)*q]); q++)
		v = v << 4 | (d - 1);
	if (q == *p || q - *p > 16)
		return false;
	*p = q;
	*value = v;
	return true;
}

struct parse_state {
	struct kallsyms *k;
	struct pool pool;
	size_t cap, seen, zero;
	uint32_t last_module; /* index of the last line's module */
	bool sorted;
};

/* Index of the module named name in k->modules (added when new), or UINT32_MAX without memory. */
static uint32_t module_index(struct parse_state *st, const char *name)
{
	struct kallsyms *k = st->k;
	size_t at;

	/* A module's symbols come together: the last line's module first, then the others (tens). */
	if (st->last_module && !strcmp(st->pool.data + k->modules[st->last_module].name, name))
		return st->last_module;
	for (size_t i = 1; i < k->nmodules; i++)
		if (!strcmp(st->pool.data + k->modules[i].name, name))
			return st->last_module = (uint32_t)i;
	if (k->nmodules == k->modules_cap) {
		size_t ncap = k->modules_cap * 2;
		struct ksym_module *nm = realloc(k->modules, ncap * sizeof(*nm));

		if (!nm || ncap >= KSYM_END_MARKER)
			return UINT32_MAX;
		k->modules = nm;
		k->modules_cap = ncap;
	}
	if ((at = pool_add(&st->pool, name, strlen(name))) == SIZE_MAX || at > UINT32_MAX)
		return UINT32_MAX;
	k->modules[k->nmodules] = (struct ksym_module){ .name = (uint32_t)at };
	return st->last_module = (uint32_t)k->nmodules++;
}

/* One line, [line, end) without its newline (modified in place). 0, or -ENOMEM. */
static int parse_line(struct parse_state *st, char *line, char *end)
{
	const char *p = line;
	char type, *name, *module;
	size_t name_at, name_len;
	uint32_t module_at = 0;
	uint64_t address;

	if (end - p > 16 && p[16] == ' ' && parse_hex16(p, &address))
		p += 16;
	else if (!parse_hex(&p, end, &address))
		return 0;
	if (end - p < 3 || p[0] != ' ' || p[2] != ' ')
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
	name_len = (size_t)((module ? module : end) - name);
	if (module) {
		*module++ = 0;
		if (*module == '[')
			module++;
		module[strcspn(module, "]")] = 0;
	}
	if (!name_len)
		return 0;
	if (st->k->count == st->cap) {
		size_t ncap = st->cap ? st->cap * 2 : 4096;
		struct ksym_entry *ns = realloc(st->k->syms, ncap * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		st->k->syms = ns;
		st->cap = ncap;
	}
	name_at = pool_add(&st->pool, name, name_len);
	if (name_at == SIZE_MAX || name_at > UINT32_MAX)
		return -ENOMEM;
	if (module && (module_at = module_index(st, module)) == UINT32_MAX)
		return -ENOMEM;
	if (st->k->count && address < st->k->syms[st->k->count - 1].address)
		st->sorted = false;
	st->k->syms[st->k->count++] = (struct ksym_entry){
		.address = address, .name = (uint32_t)name_at,
		.module = module_at | (!module && is_end_marker(name, name_len) ? KSYM_END_MARKER : 0),
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
	struct parse_state st = { .sorted = true };
	char *buf = malloc(BLOCK + 1);
	size_t have = 0, n;
	bool skipping = false; /* inside a line too long for the block */

	st.k = calloc(1, sizeof(*st.k));
	if (!st.k || !buf || !(st.k->found = malloc(sizeof(*st.k->found))) ||
	    !(st.k->modules = calloc(8, sizeof(*st.k->modules))))
		goto fail;
	st.k->nmodules = 1; /* [0]: the kernel's own text */
	st.k->modules_cap = 8;
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
	st.k->strings_len = st.pool.len;
	st.k->hidden = st.seen > 0 && st.zero == st.seen;
	if (!st.sorted) /* the kernel's own symbols come sorted; modules and BPF may not */
		sort_u64(st.k->syms, st.k->count, sizeof(*st.k->syms), offsetof(struct ksym_entry, address));
	return st.k;

fail:
	free(buf);
	if (st.k)
		st.k->strings = st.pool.data;
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
	struct module_range *ranges = NULL;
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
	/* Bpf programs and trampolines have no range: their symbols keep no end. */
	for (size_t i = 1; i < k->nmodules; i++) {
		const char *name = k->strings + k->modules[i].name;

		if (!strcmp(name, "bpf"))
			continue;
		for (size_t j = 0; j < n; j++)
			if (!strcmp(ranges[j].name, name)) {
				k->modules[i].end = ranges[j].end;
				break;
			}
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
	kallsyms_free(k->changing);
	kallsyms_file_free(k->file);
	free(k->strings);
	free(k->syms);
	free(k->modules);
	free(k->found);
	free(k);
}

/* The last entry of k at or below address, or NULL. */
static const struct ksym_entry *last_at_or_below(const struct kallsyms *k, uint64_t address)
{
	size_t lo = 0, hi;

	if (k && k->file)
		return kallsyms_file_entry(k, address);
	if (!k || !k->count || address < k->syms[0].address)
		return NULL;
	hi = k->count;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].address <= address)
			lo = mid;
		else
			hi = mid;
	}
	return &k->syms[lo];
}

const struct ksym *kallsyms_lookup(const struct kallsyms *k, uint64_t address)
{
	const struct ksym_entry *e, *c;
	const struct ksym_module *m;
	uint64_t end;

	if (!k || k->hidden)
		return NULL;
	e = last_at_or_below(k, address);
	/* Joined with what the cache left out: the entry of the two nearest below, as one table would. */
	if ((c = last_at_or_below(k->changing, address)) && (!e || c->address > e->address)) {
		e = c;
		k = k->changing;
	}
	if (!e)
		return NULL;
	/* Always true of a parsed table; checked here for one mapped from the cache (kallsyms_cache.c). */
	if (e->name >= k->strings_len || (e->module & ~KSYM_END_MARKER) >= k->nmodules)
		return NULL;
	m = &k->modules[e->module & ~KSYM_END_MARKER];
	end = e->module & KSYM_END_MARKER ? e->address : m->end;
	if (end && address >= end)
		return NULL; /* past the end of the module or of the kernel's text */
	if (k->file) {
		const char *name = kallsyms_file_string(k, e->name, k->file->name);
		const char *module = m == k->modules ? kallsyms_vmlinux : kallsyms_file_string(k, m->name, k->file->module);

		if (!name || !module)
			return NULL;
		*k->found = (struct ksym){ .address = e->address, .name = name, .end = end, .module = module };
		return k->found;
	}
	*k->found = (struct ksym){
		.address = e->address, .name = k->strings + e->name, .end = end,
		.module = m == k->modules ? kallsyms_vmlinux : k->strings + m->name,
	};
	return k->found;
}

size_t kallsyms_count(const struct kallsyms *k)
{
	return k ? k->count + kallsyms_count(k->changing) : 0;
}

bool kallsyms_hidden(const struct kallsyms *k)
{
	return k && k->hidden;
}

bool kallsyms_partial(const struct kallsyms *k)
{
	return k && k->partial;
}
