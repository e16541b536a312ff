// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "output/flame_tree.h"
#include "output/html_page.h"
#include "output/output_file.h"
#include "output/writers.h"

/* The page's colour of a frame: its type, and "inlined" for the frames a location's outermost
 * function inlined (lines[0 .. n-1) of a location are innermost first). Types added to the profile
 * later are named here, or shown as native. */
static const char *frame_type(const struct pf_location *loc, uint32_t line)
{
	if (loc->nlines > 1 && line + 1 < loc->nlines)
		return "inlined";
	switch (loc->type) {
	case PF_FRAME_KERNEL:
		return "kernel";
	case PF_FRAME_GO:
		return "go";
	default:
		return "native";
	}
}

/* A process's service.name, "" when it has none. */
static const char *service_name(const struct profile *p, const struct pf_process *proc)
{
	for (uint32_t k = 0; k < proc->nattributes; k++) {
		const struct pf_attribute *a = &p->process_attributes[proc->first_attribute + k];

		if (a->type == PF_ATTR_STRING && !strcmp(profile_string(p, a->key), "service.name"))
			return profile_string(p, a->string_value);
	}
	return "";
}

static int64_t location_frame(struct flame *f, const struct profile *p, const struct pf_location *loc, uint32_t l)
{
	struct flame_frame_desc d = { .module = profile_string(p, loc->module), .type = frame_type(loc, l) };
	char label[1024];

	d.name = profile_line_label(p, loc, l, label, sizeof(label));
	if (l < loc->nlines) {
		const struct pf_line *line = &p->lines[loc->first_line + l];
		const struct pf_function *fn = &p->functions[line->function];

		/* Frames merge by function: the line shown is where it starts when known. */
		d.file = profile_string(p, fn->filename);
		d.line = fn->start_line ? fn->start_line : line->line;
	}
	return flame_frame(f, &d);
}

/* The view's stacks: process frame, then callers down to the leaf. */
static int add_samples(struct flame *f, int view, const struct profile *p, enum pf_view pv)
{
	uint32_t *frames = NULL;
	size_t cap = 0;
	int r = 0;

	for (size_t i = 0; i < p->nsamples && !r; i++) {
		const struct pf_sample *s = &p->samples[i];
		const struct pf_stack *st = &p->stacks[s->stack];
		const struct pf_process *proc = &p->processes[s->process];
		size_t n = 0, need = 1;
		int64_t id;

		if (!profile_sample_in_view(s, pv))
			continue;
		for (size_t j = 0; j < st->n; j++) {
			const struct pf_location *loc = &p->locations[p->stack_locations[st->first + j]];

			need += loc->nlines ? loc->nlines : 1;
		}
		if (need > cap) {
			uint32_t *a = realloc(frames, need * sizeof(*a));

			if (!a) {
				r = -ENOMEM;
				break;
			}
			frames = a;
			cap = need;
		}
		id = flame_frame(f, &(struct flame_frame_desc){
			.name = profile_string(p, proc->name), .module = service_name(p, proc), .type = "process" });
		if (id >= 0)
			frames[n++] = (uint32_t)id;
		for (size_t j = st->n; id >= 0 && j-- > 0;) {
			const struct pf_location *loc = &p->locations[p->stack_locations[st->first + j]];

			for (uint32_t l = loc->nlines ? loc->nlines : 1; id >= 0 && l-- > 0;)
				if ((id = location_frame(f, p, loc, l)) >= 0)
					frames[n++] = (uint32_t)id;
		}
		if (id < 0) {
			r = (int)id;
			break;
		}
		r = flame_add_stack(f, view, frames, n, 0, profile_sample_value(s, pv));
		if (r == -ENOSPC)
			r = 0; /* counted: the page says how many were left out */
	}
	free(frames);
	return r;
}

/* The page's views, in its order: on-CPU, off-CPU (--off-cpu), the heap's (--alloc). */
static const struct {
	enum pf_view view;
	const char *name, *unit;
} views[] = {
	{ PF_VIEW_CPU, "On-CPU", "samples" },
	{ PF_VIEW_OFF_CPU, "Off-CPU", "ns" },
	{ PF_VIEW_ALLOC_SPACE, "Allocated bytes", "bytes" },
	{ PF_VIEW_ALLOC_OBJECTS, "Allocations", "objects" },
	{ PF_VIEW_INUSE_SPACE, "In-use bytes", "bytes" },
	{ PF_VIEW_INUSE_OBJECTS, "In-use objects", "objects" },
};

static int fill_flame(struct flame *f, const struct profile *p)
{
	char title[128], subtitle[256];
	time_t start = (time_t)(p->time_unix_ns / 1000000000u);
	struct tm tm;
	int view, r;

	gmtime_r(&start, &tm);
	strftime(title, sizeof(title), "otelprofd profile, %Y-%m-%d %H:%M:%S UTC", &tm);
	snprintf(subtitle, sizeof(subtitle), "%" PRIu64 " samples over %.1f s at %u Hz from %zu process%s",
		 p->total_count, p->duration_ns / 1e9, p->frequency, p->nprocesses - 1,
		 p->nprocesses == 2 ? "" : "es");
	r = flame_set_title(f, title, subtitle);
	if (r)
		return r;
	for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
		if ((views[i].view == PF_VIEW_OFF_CPU && !p->off_cpu_enabled) ||
		    (views[i].view >= PF_VIEW_ALLOC_OBJECTS && !p->alloc_enabled))
			continue;
		view = flame_add_view(f, views[i].name, views[i].unit, false);
		if (view < 0)
			return view;
		r = add_samples(f, view, p, views[i].view);
		if (r)
			return r;
	}
	return 0;
}

int write_html(const struct profile *p, FILE *out)
{
	struct flame *f = flame_new(0);
	int r;

	if (!f)
		return -ENOMEM;
	r = fill_flame(f, p);
	if (!r && flame_dropped(f))
		log_warn("The flame graph leaves out %" PRIu64 " stacks past its bound of %u nodes", flame_dropped(f),
			 FLAME_DEFAULT_MAX_NODES);
	if (!r)
		r = html_page_write(f, out);
	flame_free(f);
	return r;
}
