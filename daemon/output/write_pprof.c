// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "profile/intern.h"
#include "output/output_file.h"
#include "pprof_profile.pb-c.h"
#include "output/writers.h"

typedef Perftools__Profiles__Profile PProfile;
typedef Perftools__Profiles__Sample PSample;
typedef Perftools__Profiles__Label PLabel;
typedef Perftools__Profiles__Location PLocation;
typedef Perftools__Profiles__Line PLine;
typedef Perftools__Profiles__Function PFunction;
typedef Perftools__Profiles__Mapping PMapping;
typedef Perftools__Profiles__ValueType PValueType;

/* Strings pprof needs beyond the profile's own: appended after them. */
enum extra_string {
	STR_SAMPLES, STR_COUNT, STR_CPU, STR_NANOSECONDS, STR_PID, STR_TID, STR_THREAD_NAME,
	STR_PROCESS_NAME, STR_CPU_LABEL, STR_KERNEL, STR_TRACE_ID, STR_SPAN_ID, STR_OFF_CPU, STR_ALLOC_OBJECTS,
	STR_ALLOC_SPACE, STR_INUSE_OBJECTS, STR_INUSE_SPACE, STR_BYTES, NEXTRA,
};
static const char *const extra_strings[NEXTRA] = {
	"samples", "count", "cpu", "nanoseconds", "pid", "tid", "thread_name", "process_name",
	"cpu", "[kernel.kallsyms]", "trace_id", "span_id", "off_cpu", "alloc_objects",
	"alloc_space", "inuse_objects", "inuse_space", "bytes",
};

/* Sample types: samples/count, cpu/nanoseconds, with --off-cpu off_cpu/nanoseconds, and with --alloc
 * pprof's heap types alloc_objects/count, alloc_space/bytes, inuse_objects/count, inuse_space/bytes. */
#define MAX_TYPES 7
#define HEAP_TYPES 4

#define LABELS_PER_SAMPLE 5

struct pprof_arena {
	PValueType types[MAX_TYPES], period_type;
	PValueType *type_ptrs[MAX_TYPES];
	char **strings;
	PMapping *mappings;
	PMapping **mapping_ptrs;
	PFunction *functions;
	PFunction **function_ptrs;
	PLocation *locations;
	PLocation **location_ptrs;
	PLine *lines;
	PLine **line_ptrs;
	PSample *samples;
	PSample **sample_ptrs;
	PLabel *labels;
	PLabel **label_ptrs;
	uint64_t *location_ids;
	int64_t *values;
};

static void arena_free(struct pprof_arena *a)
{
	free(a->strings);
	free(a->mappings);
	free(a->mapping_ptrs);
	free(a->functions);
	free(a->function_ptrs);
	free(a->locations);
	free(a->location_ptrs);
	free(a->lines);
	free(a->line_ptrs);
	free(a->samples);
	free(a->sample_ptrs);
	free(a->labels);
	free(a->label_ptrs);
	free(a->location_ids);
	free(a->values);
}

static int64_t extra(const struct profile *p, enum extra_string s)
{
	return (int64_t)intern_count(p->strings) + s;
}

static void set_label(PLabel *l, int64_t key, int64_t str, int64_t num)
{
	perftools__profiles__label__init(l);
	l->key = key;
	l->str = str;
	l->num = num;
}

int encode_pprof(const struct profile *p, uint8_t **buf, size_t *len)
{
	size_t nstrings = intern_count(p->strings) + NEXTRA;
	size_t nmap = p->nmappings - 1, nfunc = p->nfunctions - 1, nloc = p->nlocations - 1;
	size_t nlabels = 0, nlocids = 0;
	struct pprof_arena a = { 0 };
	PProfile prof;
	size_t heap_type;
	int err = -ENOMEM;

	for (size_t i = 0; i < p->nsamples; i++) {
		nlocids += p->stacks[p->samples[i].stack].n;
		nlabels += LABELS_PER_SAMPLE + p->processes[p->samples[i].process].nattributes;
		nlabels += p->samples[i].link ? 2 + p->links[p->samples[i].link].nattributes : 0;
	}

	a.strings = calloc(nstrings, sizeof(*a.strings));
	a.mappings = calloc(nmap + 1, sizeof(*a.mappings));
	a.mapping_ptrs = calloc(nmap + 1, sizeof(*a.mapping_ptrs));
	a.functions = calloc(nfunc + 1, sizeof(*a.functions));
	a.function_ptrs = calloc(nfunc + 1, sizeof(*a.function_ptrs));
	a.locations = calloc(nloc + 1, sizeof(*a.locations));
	a.location_ptrs = calloc(nloc + 1, sizeof(*a.location_ptrs));
	a.lines = calloc(p->nlines + 1, sizeof(*a.lines));
	a.line_ptrs = calloc(p->nlines + 1, sizeof(*a.line_ptrs));
	a.samples = calloc(p->nsamples + 1, sizeof(*a.samples));
	a.sample_ptrs = calloc(p->nsamples + 1, sizeof(*a.sample_ptrs));
	a.labels = calloc(nlabels + 1, sizeof(*a.labels));
	a.label_ptrs = calloc(nlabels + 1, sizeof(*a.label_ptrs));
	a.location_ids = calloc(nlocids + 1, sizeof(*a.location_ids));
	a.values = calloc(MAX_TYPES * p->nsamples + 1, sizeof(*a.values));
	if (!a.strings || !a.mappings || !a.mapping_ptrs || !a.functions || !a.function_ptrs ||
	    !a.locations || !a.location_ptrs || !a.lines || !a.line_ptrs || !a.samples ||
	    !a.sample_ptrs || !a.labels || !a.label_ptrs || !a.location_ids || !a.values)
		goto out;

	perftools__profiles__profile__init(&prof);
	for (size_t i = 0; i < intern_count(p->strings); i++)
		a.strings[i] = (char *)profile_string(p, (uint32_t)i);
	for (size_t i = 0; i < NEXTRA; i++)
		a.strings[intern_count(p->strings) + i] = (char *)extra_strings[i];
	prof.string_table = a.strings;
	prof.n_string_table = nstrings;

	for (int i = 0; i < MAX_TYPES; i++) {
		perftools__profiles__value_type__init(&a.types[i]);
		a.type_ptrs[i] = &a.types[i];
	}
	a.types[0].type = extra(p, STR_SAMPLES);
	a.types[0].unit = extra(p, STR_COUNT);
	a.types[1].type = extra(p, STR_CPU);
	a.types[1].unit = extra(p, STR_NANOSECONDS);
	perftools__profiles__value_type__init(&a.period_type);
	a.period_type.type = extra(p, STR_CPU);
	a.period_type.unit = extra(p, STR_NANOSECONDS);
	a.types[2].type = extra(p, STR_OFF_CPU);
	a.types[2].unit = extra(p, STR_NANOSECONDS);
	heap_type = p->off_cpu_enabled ? 3 : 2;
	for (int i = 0; i < HEAP_TYPES; i++) {
		a.types[heap_type + i].type = extra(p, (enum extra_string)(STR_ALLOC_OBJECTS + i));
		a.types[heap_type + i].unit = extra(p, i % 2 ? STR_BYTES : STR_COUNT);
	}
	prof.sample_type = a.type_ptrs;
	prof.n_sample_type = heap_type + (p->alloc_enabled ? HEAP_TYPES : 0);
	prof.period_type = &a.period_type;
	prof.period = (int64_t)p->period_ns;
	prof.time_nanos = (int64_t)p->time_unix_ns;
	prof.duration_nanos = (int64_t)p->duration_ns;

	/* Ids are the profile's table indices: element 0 (the zero value) is not written. */
	for (size_t i = 1; i <= nfunc; i++) {
		PFunction *f = &a.functions[i - 1];

		perftools__profiles__function__init(f);
		f->id = i;
		f->name = p->functions[i].name ? p->functions[i].name : p->functions[i].system_name;
		f->system_name = p->functions[i].system_name;
		f->filename = p->functions[i].filename;
		f->start_line = p->functions[i].start_line;
		a.function_ptrs[i - 1] = f;
	}
	for (size_t i = 1; i <= nmap; i++) {
		PMapping *m = &a.mappings[i - 1];

		perftools__profiles__mapping__init(m);
		m->id = i;
		m->memory_start = p->mappings[i].memory_start;
		m->memory_limit = p->mappings[i].memory_limit;
		m->file_offset = p->mappings[i].file_offset;
		m->filename = p->mappings[i].filename;
		m->build_id = p->mappings[i].build_id;
		a.mapping_ptrs[i - 1] = m;
	}
	for (size_t i = 0; i < p->nlines; i++) {
		perftools__profiles__line__init(&a.lines[i]);
		a.lines[i].function_id = p->lines[i].function;
		a.lines[i].line = p->lines[i].line;
		a.lines[i].column = p->lines[i].column;
		a.line_ptrs[i] = &a.lines[i];
	}
	for (size_t i = 1; i <= nloc; i++) {
		const struct pf_location *src = &p->locations[i];
		PLocation *l = &a.locations[i - 1];

		perftools__profiles__location__init(l);
		l->id = i;
		l->mapping_id = src->mapping;
		l->address = src->address;
		l->line = a.line_ptrs + src->first_line;
		l->n_line = src->nlines;
		a.location_ptrs[i - 1] = l;
		if (src->mapping && src->nlines) {
			PMapping *m = &a.mappings[src->mapping - 1];

			m->has_functions = true;
			m->has_inline_frames = m->has_inline_frames || src->nlines > 1;
			if (p->functions[p->lines[src->first_line].function].filename)
				m->has_filenames = true;
			if (p->lines[src->first_line].line)
				m->has_line_numbers = true;
		}
	}

	for (size_t i = 0, nextid = 0, nextlabel = 0; i < p->nsamples; i++) {
		const struct pf_sample *src = &p->samples[i];
		const struct pf_stack *st = &p->stacks[src->stack];
		const struct pf_process *proc = &p->processes[src->process];
		PSample *s = &a.samples[i];
		PLabel *l = &a.labels[nextlabel];
		size_t n = LABELS_PER_SAMPLE;

		perftools__profiles__sample__init(s);
		s->location_id = a.location_ids + nextid;
		s->n_location_id = st->n;
		for (size_t j = 0; j < st->n; j++)
			a.location_ids[nextid++] = p->stack_locations[st->first + j];
		s->value = a.values + MAX_TYPES * i;
		s->n_value = prof.n_sample_type;
		/* A sample has its own type's values, 0 in the others'. */
		if (src->heap) {
			size_t at = heap_type + (src->heap == PF_HEAP_INUSE ? 2 : 0);

			s->value[at] = (int64_t)src->objects;
			s->value[at + 1] = (int64_t)src->value_sum;
		} else if (src->off_cpu) {
			s->value[2] = (int64_t)src->value_sum;
		} else {
			s->value[0] = (int64_t)src->count;
			s->value[1] = (int64_t)(src->count * p->period_ns);
		}
		set_label(&l[0], extra(p, STR_PID), 0, p->processes[src->process].pid);
		set_label(&l[1], extra(p, STR_TID), 0, src->tid);
		set_label(&l[2], extra(p, STR_THREAD_NAME), src->thread_name, 0);
		set_label(&l[3], extra(p, STR_PROCESS_NAME), p->processes[src->process].name, 0);
		set_label(&l[4], extra(p, STR_CPU_LABEL), 0, src->cpu);
		/* The process's resource attributes (container.id, service.name, ...) as labels, so that
		 * pprof viewers can filter by them; process.pid is the pid label already. */
		for (uint32_t k = 0; k < proc->nattributes; k++) {
			const struct pf_attribute *attr = &p->process_attributes[proc->first_attribute + k];

			if (!strcmp(profile_string(p, attr->key), "process.pid"))
				continue;
			set_label(&l[n++], attr->key, attr->type == PF_ATTR_STRING ? attr->string_value : 0,
				  attr->type == PF_ATTR_INT ? attr->int_value : 0);
		}
		/* The span the samples ran under, and the attributes its thread published. */
		if (src->link) {
			const struct pf_link *link = &p->links[src->link];

			/* Zero ids: no span, only attributes (goroutine labels, runtimes/go/go_labels.h). */
			if (!profile_link_untraced(link)) {
				set_label(&l[n++], extra(p, STR_TRACE_ID), link->trace_hex, 0);
				set_label(&l[n++], extra(p, STR_SPAN_ID), link->span_hex, 0);
			}
			for (uint32_t k = 0; k < link->nattributes; k++) {
				const struct pf_attribute *attr = &p->link_attributes[link->first_attribute + k];

				set_label(&l[n++], attr->key, attr->string_value, 0);
			}
		}
		for (size_t k = 0; k < n; k++)
			a.label_ptrs[nextlabel + k] = &l[k];
		s->label = a.label_ptrs + nextlabel;
		s->n_label = n;
		nextlabel += n;
		a.sample_ptrs[i] = s;
	}
	prof.function = a.function_ptrs;
	prof.n_function = nfunc;
	prof.mapping = a.mapping_ptrs;
	prof.n_mapping = nmap;
	prof.location = a.location_ptrs;
	prof.n_location = nloc;
	prof.sample = a.sample_ptrs;
	prof.n_sample = p->nsamples;

	*len = perftools__profiles__profile__get_packed_size(&prof);
	*buf = malloc(*len ? *len : 1);
	if (!*buf)
		goto out;
	perftools__profiles__profile__pack(&prof, *buf);
	err = 0;
out:
	arena_free(&a);
	return err;
}

/* data gzipped into out a chunk at a time. 0 or -errno: a failed write says why (a full disk), which
 * zlib's own file functions do not reliably keep. */
static int gzip_to(FILE *out, const uint8_t *data, size_t len)
{
	uint8_t chunk[16384];
	z_stream zs = { 0 };
	size_t n;
	int r, err = 0;

	if (len > UINT_MAX)
		return -EFBIG;
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)len;
	do {
		zs.next_out = chunk;
		zs.avail_out = sizeof(chunk);
		r = deflate(&zs, Z_FINISH);
		if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR) {
			err = -EIO;
			break;
		}
		n = sizeof(chunk) - zs.avail_out;
		if (n && fwrite(chunk, 1, n, out) != n) {
			err = -errno;
			break;
		}
	} while (r != Z_STREAM_END);
	deflateEnd(&zs);
	return err;
}

int write_pprof(const struct profile *p, FILE *out)
{
	uint8_t *buf = NULL;
	size_t len;
	int err = encode_pprof(p, &buf, &len);

	if (!err)
		err = gzip_to(out, buf, len);
	free(buf);
	return err;
}

int write_pprof_file(const struct profile *p, const char *path)
{
	struct output_file *f = output_file_open(path);
	int err;

	if (!f)
		return -errno;
	err = write_pprof(p, output_file_stream(f));
	if (err) {
		output_file_abort(f);
		return err;
	}
	return output_file_commit(f);
}
