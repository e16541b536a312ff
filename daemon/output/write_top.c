// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "profile/intern.h"
#include "output/writers.h"

#include <stdbool.h>

struct top_row {
	const char *key; /* "label\0module" */
	uint64_t self, total;
};

static int by_self(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->key, y->key);
}

static int by_total(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return by_self(a, b);
}

/* A heap section (--alloc): functions by the bytes allocated (or held) through them, the leaf being
 * the sampler library's own frames. */
static void print_heap(const struct profile *p, enum pf_view view, const struct top_row *rows, size_t nrows,
		       unsigned nrows_max, FILE *out)
{
	bool inuse = view == PF_VIEW_INUSE_SPACE;
	uint64_t bytes = inuse ? p->inuse_bytes : p->alloc_bytes, objects = inuse ? p->inuse_objects : p->alloc_objects;

	fprintf(out, "\n%s: %.1f MiB in %" PRIu64 " %s (estimated from the sampled ones)\n",
		inuse ? "In use at the end" : "Allocated", bytes / 1048576.0, objects,
		plural(objects, "allocation", "allocations"));
	if (!bytes) {
		fprintf(out, "No %s.\n", inuse ? "sampled allocation is live" : "allocation was sampled");
		return;
	}
	fprintf(out, "%7s %12s  %-50s %s\n", "TOTAL%", "MIB", "FUNCTION", "MODULE");
	for (size_t i = 0; i < nrows && i < nrows_max; i++) {
		const char *label = rows[i].key, *module = label + strlen(label) + 1;

		fprintf(out, "%7.2f %12.3f  %-50s %s\n", 100.0 * rows[i].total / bytes, rows[i].total / 1048576.0,
			label, module);
	}
}

/* The off-CPU section: functions by time away as the leaf (self) and anywhere in the stack (total). */
static void print_off_cpu(const struct profile *p, const struct top_row *rows, size_t nrows, unsigned nrows_max,
			  FILE *out)
{
	fprintf(out, "\nOff-CPU: %.3f s over %" PRIu64 " %s (scaled by the sampling)\n", p->off_cpu_ns / 1e9,
		p->off_cpu_count, plural(p->off_cpu_count, "wait", "waits"));
	if (!p->off_cpu_ns) {
		fprintf(out, "No off-CPU time: no sampled thread waited.\n");
		return;
	}
	fprintf(out, "%7s %7s %12s  %-50s %s\n", "SELF%", "TOTAL%", "OFF-CPU-MS", "FUNCTION", "MODULE");
	for (size_t i = 0; i < nrows && i < nrows_max; i++) {
		const char *label = rows[i].key, *module = label + strlen(label) + 1;

		fprintf(out, "%7.2f %7.2f %12.3f  %-50s %s\n", 100.0 * rows[i].self / p->off_cpu_ns,
			100.0 * rows[i].total / p->off_cpu_ns, rows[i].total / 1e6, label, module);
	}
}

/* Id of the row for one line of a location ("label\0module"). */
static int64_t row_id(const struct profile *p, struct intern *rows, const struct pf_location *loc, uint32_t line)
{
	char key[1024];
	size_t len;

	profile_line_label(p, loc, line, key, sizeof(key) - 256);
	len = strlen(key) + 1;
	len += (size_t)snprintf(key + len, sizeof(key) - len, "%s", profile_string(p, loc->module)) + 1;
	return intern_put(rows, key, len, NULL);
}

/* The table of on-CPU samples, or the section of another view: off-CPU (time away by function),
 * or the heap's (bytes by function). */
static int top_table(const struct profile *p, enum pf_view view, unsigned nrows_max, FILE *out)
{
	struct intern *ids = intern_new(SIZE_MAX);
	uint64_t *self = NULL, *total = NULL, *seen = NULL;
	size_t cap = 0, nrows;
	struct top_row *rows = NULL;
	int err = -ENOMEM;

	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];
		const struct pf_stack *st = &p->stacks[s->stack];

		if (!profile_sample_in_view(s, view))
			continue;
		for (size_t j = 0; j < st->n; j++) {
			const struct pf_location *loc = &p->locations[p->stack_locations[st->first + j]];
			uint32_t n = loc->nlines ? loc->nlines : 1;

			for (uint32_t l = 0; l < n; l++) {
				int64_t id = row_id(p, ids, loc, l);

				if (id < 0)
					goto out;
				if ((size_t)id >= cap) {
					size_t ncap = cap ? cap * 2 : 1024;
					uint64_t *a = realloc(self, ncap * 8), *b2, *c;

					if (!a)
						goto out;
					self = a;
					b2 = realloc(total, ncap * 8);
					if (!b2)
						goto out;
					total = b2;
					c = realloc(seen, ncap * 8);
					if (!c)
						goto out;
					seen = c;
					memset(self + cap, 0, (ncap - cap) * 8);
					memset(total + cap, 0, (ncap - cap) * 8);
					memset(seen + cap, 0, (ncap - cap) * 8);
					cap = ncap;
				}
				if (j == 0 && l == 0)
					self[id] += profile_sample_value(s, view);
				/* A function counts once per stack in its total, however often it recurses. */
				if (seen[id] != i + 1) {
					seen[id] = i + 1;
					total[id] += profile_sample_value(s, view);
				}
			}
		}
	}

	nrows = intern_count(ids);
	rows = calloc(nrows + 1, sizeof(*rows));
	if (!rows)
		goto out;
	for (size_t i = 0; i < nrows; i++)
		rows[i] = (struct top_row){ intern_key(ids, (uint32_t)i, NULL), self[i], total[i] };
	qsort(rows, nrows, sizeof(*rows), view >= PF_VIEW_ALLOC_OBJECTS ? by_total : by_self);

	if (view == PF_VIEW_OFF_CPU) {
		print_off_cpu(p, rows, nrows, nrows_max, out);
		goto done;
	}
	if (view != PF_VIEW_CPU) {
		print_heap(p, view, rows, nrows, nrows_max, out);
		goto done;
	}
	fprintf(out, "%" PRIu64 " %s from %zu %s over %.1f s at %u Hz\n", p->total_count,
		plural(p->total_count, "sample", "samples"), p->nprocesses - 1,
		plural(p->nprocesses - 1, "process", "processes"), p->duration_ns / 1e9, p->frequency);
	if (!p->total_count) {
		fprintf(out, "No samples: the profiled processes did not run on a CPU.\n");
	} else {
		fprintf(out, "%7s %7s %9s  %-50s %s\n", "SELF%", "TOTAL%", "SAMPLES", "FUNCTION", "MODULE");
		for (size_t i = 0; i < nrows && i < nrows_max; i++) {
			const char *label = rows[i].key, *module = label + strlen(label) + 1;

			fprintf(out, "%7.2f %7.2f %9" PRIu64 "  %-50s %s\n",
				100.0 * rows[i].self / p->total_count, 100.0 * rows[i].total / p->total_count,
				rows[i].self, label, module);
		}
	}
done:
	err = fflush(out) || ferror(out) ? -EIO : 0;

out:
	free(rows);
	free(self);
	free(total);
	free(seen);
	intern_free(ids);
	return err;
}

int write_top(const struct profile *p, unsigned nrows_max, FILE *out)
{
	int r = top_table(p, PF_VIEW_CPU, nrows_max, out);

	if (!r && p->off_cpu_enabled)
		r = top_table(p, PF_VIEW_OFF_CPU, nrows_max, out);
	if (!r && p->alloc_enabled)
		r = top_table(p, PF_VIEW_ALLOC_SPACE, nrows_max, out);
	if (!r && p->alloc_enabled)
		r = top_table(p, PF_VIEW_INUSE_SPACE, nrows_max, out);
	return r;
}
