#include "kallsyms.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct kallsyms {
	struct ksym *syms;
	size_t count;
	char **pool;     /* one allocation per line kept: names and module names */
	size_t npool;
	bool hidden;
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

struct kallsyms *kallsyms_parse(FILE *f)
{
	struct kallsyms *k = calloc(1, sizeof(*k));
	size_t cap = 0, seen = 0, zero = 0;
	char *line = NULL;
	size_t linecap = 0;

	if (!k)
		return NULL;
	while (getline(&line, &linecap, f) > 0) {
		char type, *name, *module, *end, *copy;
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
			char **np = realloc(k->pool, ncap * sizeof(*np));

			if (ns)
				k->syms = ns;
			if (np)
				k->pool = np;
			if (!ns || !np)
				goto fail;
			cap = ncap;
		}
		/* name and module share one allocation: "name\0module\0" */
		{
			size_t nlen = strlen(name), mlen = module ? strlen(module) : strlen("vmlinux");

			copy = malloc(nlen + mlen + 2);
			if (!copy)
				goto fail;
			memcpy(copy, name, nlen + 1);
			memcpy(copy + nlen + 1, module ? module : "vmlinux", mlen + 1);
			k->pool[k->npool++] = copy;
			k->syms[k->count++] = (struct ksym){
				.address = address, .name = copy, .module = copy + nlen + 1,
				.end = !module && is_end_marker(copy) ? address : 0,
			};
		}
	}
	free(line);
	k->hidden = seen > 0 && zero == seen;
	if (k->count)
		qsort(k->syms, k->count, sizeof(*k->syms), by_address);
	return k;

fail:
	free(line);
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
	for (size_t i = 0; i < k->npool; i++)
		free(k->pool[i]);
	free(k->pool);
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
