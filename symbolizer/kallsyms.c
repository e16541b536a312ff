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
			k->syms[k->count++] = (struct ksym){ address, copy, copy + nlen + 1 };
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
