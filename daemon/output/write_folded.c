// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile/intern.h"
#include "output/writers.h"
#include "output/output_file.h"

#define FOLDED_MAX_LINE (64 * 1024)

/* Folded stacks use ';' between frames and a space before the count: keep names from breaking it. */
static void append_frame(char *line, size_t *len, const char *label, bool kernel)
{
	if (*len + 1 >= FOLDED_MAX_LINE)
		return;
	line[(*len)++] = ';';
	for (const char *c = label; *c && *len + 5 < FOLDED_MAX_LINE; c++)
		line[(*len)++] = (*c == ';' || *c == '\n' || *c == '\r') ? '_' : *c;
	if (kernel && *len + 5 < FOLDED_MAX_LINE) {
		memcpy(line + *len, "_[k]", 4);
		*len += 4;
	}
	line[*len] = 0;
}

struct folded_row {
	const char *stack;
	uint64_t count;
};

static int by_stack(const void *a, const void *b)
{
	return strcmp(((const struct folded_row *)a)->stack, ((const struct folded_row *)b)->stack);
}

/* Folded lines of the view's samples: on-CPU counts, off-CPU microseconds away, objects or bytes. */
static int folded(const struct profile *p, enum pf_view view, FILE *out)
{
	struct intern *lines = intern_new(SIZE_MAX);
	uint64_t *counts = calloc(p->nsamples + 1, sizeof(*counts));
	struct folded_row *rows = NULL;
	char *line = malloc(FOLDED_MAX_LINE), label[1024];
	size_t nrows;
	int err = -ENOMEM;

	if (!lines || !counts || !line)
		goto out;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];
		const struct pf_stack *st = &p->stacks[s->stack];
		size_t len = 0;
		int64_t id;

		if (!profile_sample_in_view(s, view))
			continue;
		len = (size_t)snprintf(line, FOLDED_MAX_LINE, "%s",
				       profile_string(p, p->processes[s->process].name));
		for (size_t k = 0; line[k]; k++)
			if (line[k] == ';')
				line[k] = '_';
		for (size_t j = st->n; j-- > 0;) {
			const struct pf_location *loc = &p->locations[p->stack_locations[st->first + j]];
			uint32_t n = loc->nlines ? loc->nlines : 1;

			for (uint32_t l = n; l-- > 0;)
				append_frame(line, &len, profile_line_label(p, loc, l, label, sizeof(label)),
					     loc->type == PF_FRAME_KERNEL);
		}
		id = intern_put(lines, line, len + 1, NULL);
		if (id < 0)
			goto out;
		counts[id] += profile_sample_value(s, view);
	}

	nrows = intern_count(lines);
	rows = malloc((nrows + 1) * sizeof(*rows));
	if (!rows)
		goto out;
	for (size_t i = 0; i < nrows; i++)
		rows[i] = (struct folded_row){ intern_key(lines, (uint32_t)i, NULL), counts[i] };
	qsort(rows, nrows, sizeof(*rows), by_stack);
	/* Each write checked: the cause (a full disk) is known only when it happens. */
	for (size_t i = 0; i < nrows; i++)
		if (fprintf(out, "%s %" PRIu64 "\n", rows[i].stack,
			    view == PF_VIEW_OFF_CPU ? (rows[i].count + 500) / 1000 : rows[i].count) < 0) {
			err = -errno;
			goto out;
		}
	err = fflush(out) ? -errno : ferror(out) ? -EIO : 0;

out:
	free(rows);
	free(line);
	free(counts);
	intern_free(lines);
	return err;
}

int write_folded(const struct profile *p, FILE *out)
{
	return folded(p, PF_VIEW_CPU, out);
}

int write_folded_off_cpu(const struct profile *p, FILE *out)
{
	return folded(p, PF_VIEW_OFF_CPU, out);
}

int write_folded_view(const struct profile *p, enum pf_view view, FILE *out)
{
	return folded(p, view, out);
}

static int folded_file(const struct profile *p, enum pf_view view, const char *path)
{
	struct output_file *f = output_file_open(path);
	int r;

	if (!f)
		return -errno;
	r = folded(p, view, output_file_stream(f));
	if (r) {
		output_file_abort(f);
		return r;
	}
	return output_file_commit(f);
}

int write_folded_file(const struct profile *p, const char *path)
{
	return folded_file(p, PF_VIEW_CPU, path);
}

int write_folded_off_cpu_file(const struct profile *p, const char *path)
{
	return folded_file(p, PF_VIEW_OFF_CPU, path);
}

int write_folded_view_file(const struct profile *p, enum pf_view view, const char *path)
{
	return folded_file(p, view, path);
}

int folded_view_path(const char *path, enum pf_view view, char *buf, size_t size)
{
	size_t n = strlen(path), suffix = strlen(".folded");
	int len;

	if (n >= suffix && !strcmp(path + n - suffix, ".folded"))
		n -= suffix;
	len = snprintf(buf, size, "%.*s.%s.folded", (int)n, path,
		       view == PF_VIEW_OFF_CPU ? "off-cpu" : profile_view_name(view));
	return len < 0 || (size_t)len >= size ? -ENAMETOOLONG : 0;
}

int folded_off_cpu_path(const char *path, char *buf, size_t size)
{
	return folded_view_path(path, PF_VIEW_OFF_CPU, buf, size);
}
