// SPDX-License-Identifier: Apache-2.0
#include "diff/diff_report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/intern.h"

struct change {
	const char *name;
	uint64_t self[2];
	double delta; /* new share - base share */
};

struct changes {
	const struct flame *f;
	struct intern *names;
	struct change *rows;
	size_t cap;
};

/* Self values by function name (the leaf of each stack): names merge across modules and types so that
 * a folded file and a pprof of the same program compare. */
static int add_leaf(void *ctx, const uint32_t *frames, size_t n, const uint64_t self[2])
{
	struct changes *c = ctx;
	const char *name = flame_frame_name(c->f, frames[n - 1]);
	int64_t id = intern_put(c->names, name, strlen(name) + 1, NULL);

	if (id < 0)
		return (int)id;
	if ((size_t)id >= c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct change *rows = realloc(c->rows, cap * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		memset(rows + c->cap, 0, (cap - c->cap) * sizeof(*rows));
		c->rows = rows;
		c->cap = cap;
	}
	c->rows[id].self[0] += self[0];
	c->rows[id].self[1] += self[1];
	return 0;
}

static int by_delta(const void *a, const void *b)
{
	const struct change *x = a, *y = b;
	double dx = fabs(x->delta), dy = fabs(y->delta);

	if (dx != dy)
		return dx < dy ? 1 : -1;
	return strcmp(x->name, y->name);
}

int diff_write_top(const struct flame *f, int view, unsigned nrows, FILE *out)
{
	struct changes c = { .f = f, .names = intern_new(SIZE_MAX) };
	double base = (double)flame_total(f, view, 0), new = (double)flame_total(f, view, 1);
	size_t n;
	int r;

	if (!c.names)
		return -ENOMEM;
	r = flame_each_stack(f, view, add_leaf, &c);
	if (r)
		goto out;
	n = intern_count(c.names);
	for (size_t i = 0; i < n; i++) {
		c.rows[i].name = intern_key(c.names, (uint32_t)i, NULL);
		c.rows[i].delta = c.rows[i].self[1] / new - c.rows[i].self[0] / base;
	}
	qsort(c.rows, n, sizeof(*c.rows), by_delta);
	fprintf(out, "Self share of each function: base %" PRIu64 ", new %" PRIu64 " (each of its own total)\n",
		flame_total(f, view, 0), flame_total(f, view, 1));
	fprintf(out, "%7s %7s %8s  %s\n", "BASE%", "NEW%", "DELTA", "FUNCTION");
	for (size_t i = 0; i < n && i < nrows; i++)
		fprintf(out, "%7.2f %7.2f %+8.2f  %s\n", 100.0 * c.rows[i].self[0] / base, 100.0 * c.rows[i].self[1] / new,
			100.0 * c.rows[i].delta, c.rows[i].name);
	r = fflush(out) || ferror(out) ? -EIO : 0;
out:
	free(c.rows);
	intern_free(c.names);
	return r;
}

struct folded_out {
	const struct flame *f;
	FILE *out;
};

static int folded_line(void *ctx, const uint32_t *frames, size_t n, const uint64_t self[2])
{
	struct folded_out *o = ctx;

	for (size_t i = 0; i < n; i++) {
		const char *name = flame_frame_name(o->f, frames[i]);

		if (i)
			fputc(';', o->out);
		for (const char *c = name; *c; c++)
			fputc(*c == ';' || *c == '\n' || *c == '\r' ? '_' : *c, o->out);
		if (!strcmp(flame_frame_type(o->f, frames[i]), "kernel"))
			fputs("_[k]", o->out);
	}
	return fprintf(o->out, " %" PRIu64 " %" PRIu64 "\n", self[0], self[1]) < 0 ? -EIO : 0;
}

int diff_write_folded(const struct flame *f, int view, FILE *out)
{
	int r = flame_each_stack(f, view, folded_line, &(struct folded_out){ f, out });

	return r ?: fflush(out) || ferror(out) ? -EIO : 0;
}
