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

/*
 * One allocation for all the names rather than one per symbol: a kernel has over 100,000 of them, and
 * per-symbol mallocs cost more time and memory (allocator headers) than the names.
 */
struct kallsyms *kallsyms_parse(FILE *f)
{
	struct kallsyms *k = calloc(1, sizeof(*k));
	struct pool pool = { 0 };
	size_t cap = 0, seen = 0, zero = 0, last_module = SIZE_MAX;
	char *line = NULL;
	size_t linecap = 0;

	if (!k)
		return NULL;
	while (getline(&line, &linecap, f) > 0) {
		char type, *name, *module, *end;
		size_t name_at, module_at = SIZE_MAX;
		uint64_t address;

		address = strtoull(line, &end, 16);
		if (end == line || *end != ' ')
			continue;
		type = end[1];
		if (!type || end[2] != ' ')
			continue;
		seen++;
		if (address == 0)
			zero++;
		if (!is_text(type))
			continue;
		name = end + 3;
		name[strcspn(name, "\n")] = 0;
		module = strchr(name, '\t');
		if (module) {
			*module++ = 0;
			if (*module == '[')
				module++;
			module[strcspn(module, "]")] = 0;
		}
		if (!*name)
			continue;
		if (k->count == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			struct ksym *ns = realloc(k->syms, ncap * sizeof(*ns));

			if (!ns)
				goto fail;
			k->syms = ns;
			cap = ncap;
		}
		name_at = pool_add(&pool, name);
		if (name_at == SIZE_MAX)
			goto fail;
		if (module) {
			/* A module's symbols come together: its name is kept once per run of them. */
			if (last_module != SIZE_MAX && !strcmp(pool.data + last_module, module))
				module_at = last_module;
			else if ((module_at = last_module = pool_add(&pool, module)) == SIZE_MAX)
				goto fail;
		}
		/* Offsets for now: the pool may still move. */
		k->syms[k->count++] = (struct ksym){
			.address = address, .name = (const char *)(uintptr_t)name_at,
			.module = module ? (const char *)(uintptr_t)module_at : NULL,
			.end = !module && is_end_marker(name) ? address : 0,
		};
	}
	free(line);
	k->strings = pool.data;
	for (size_t i = 0; i < k->count; i++) {
		struct ksym *sym = &k->syms[i];

		sym->name = k->strings + (uintptr_t)sym->name;
		sym->module = sym->module ? k->strings + (uintptr_t)sym->module : kallsyms_vmlinux;
	}
	k->hidden = seen > 0 && zero == seen;
	if (k->count)
		qsort(k->syms, k->count, sizeof(*k->syms), by_address);
	return k;

fail:
	free(line);
	free(pool.data);
	kallsyms_free(k);
	errno = ENOMEM;
	return NULL;
}

struct kallsyms *kallsyms_load(const char *path)
{
	struct kallsyms *k;
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	setvbuf(f, NULL, _IOFBF, 64 << 10); /* /proc/kallsyms is megabytes: fewer, larger reads */
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

		if (!strcmp(s->module, "vmlinux") || !strcmp(s->module, "bpf"))
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
