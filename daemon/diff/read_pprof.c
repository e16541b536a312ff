// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "diff/readers.h"
#include "pprof_profile.pb-c.h"

typedef Perftools__Profiles__Profile PProfile;
typedef Perftools__Profiles__Location PLocation;
typedef Perftools__Profiles__Function PFunction;
typedef Perftools__Profiles__Mapping PMapping;

/* Kernel addresses (the upper half on x86-64 and arm64): otelprofd's kernel locations have no mapping. */
#define KERNEL_START 0xffff800000000000ULL

/* data inflated into *out (malloc'ed), at most READ_MAX_INFLATED bytes. 0 or -EINVAL with why. */
static int gunzip(const uint8_t *data, size_t len, uint8_t **out, size_t *outlen, const char **why)
{
	z_stream zs = { 0 };
	size_t cap = len * 4 + 4096, n = 0;
	uint8_t *buf = NULL;
	int r = Z_OK;

	if (len > UINT32_MAX || inflateInit2(&zs, 15 + 16) != Z_OK) {
		*why = "cannot inflate";
		return -EINVAL;
	}
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)len;
	while (r != Z_STREAM_END) {
		if (n == cap || !buf) {
			uint8_t *grown;

			cap = buf ? cap * 2 : cap;
			if (cap > READ_MAX_INFLATED)
				cap = READ_MAX_INFLATED;
			if (n == cap) {
				*why = "inflates past 1 GiB";
				goto fail;
			}
			grown = realloc(buf, cap);
			if (!grown) {
				*why = "out of memory";
				goto fail;
			}
			buf = grown;
		}
		zs.next_out = buf + n;
		zs.avail_out = (uInt)(cap - n);
		r = inflate(&zs, Z_NO_FLUSH);
		n = cap - zs.avail_out;
		if (r == Z_BUF_ERROR && zs.avail_in == 0) {
			*why = "truncated gzip data";
			goto fail;
		}
		if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR) {
			*why = "corrupt gzip data";
			goto fail;
		}
	}
	inflateEnd(&zs);
	*out = buf;
	*outlen = n;
	return 0;
fail:
	inflateEnd(&zs);
	free(buf);
	return -EINVAL;
}

/* Objects by id: pprof ids are arbitrary numbers, looked up by binary search over a sorted copy. */
struct by_id {
	uint64_t id;
	size_t index;
};

static int cmp_id(const void *a, const void *b)
{
	const struct by_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static ssize_t find_id(const struct by_id *ids, size_t n, uint64_t id)
{
	const struct by_id key = { id, 0 }, *hit = id ? bsearch(&key, ids, n, sizeof(*ids), cmp_id) : NULL;

	return hit ? (ssize_t)hit->index : -1;
}

struct pprof_reader {
	const PProfile *p;
	const struct read_target *t;
	struct by_id *locs, *funcs, *maps;
	int64_t *loc_frames;   /* frames of each location, built once: first index into frames[] */
	uint32_t *loc_nframes;
	uint32_t *frames;      /* per location, outermost first */
	size_t nframes;
	size_t value;          /* the index of the sample type read */
	const char *why;
};

static const char *string_at(const PProfile *p, int64_t i, bool *ok)
{
	if (i < 0 || (uint64_t)i >= p->n_string_table) {
		*ok = false;
		return "";
	}
	return p->string_table[i] ? p->string_table[i] : "";
}

static struct by_id *index_ids(size_t n, uint64_t (*id_of)(const PProfile *, size_t), const PProfile *p)
{
	struct by_id *ids = malloc((n + 1) * sizeof(*ids));

	if (!ids)
		return NULL;
	for (size_t i = 0; i < n; i++)
		ids[i] = (struct by_id){ id_of(p, i), i };
	qsort(ids, n, sizeof(*ids), cmp_id);
	return ids;
}

static uint64_t loc_id(const PProfile *p, size_t i) { return p->location[i]->id; }
static uint64_t func_id(const PProfile *p, size_t i) { return p->function[i]->id; }
static uint64_t map_id(const PProfile *p, size_t i) { return p->mapping[i]->id; }

/* The frames of location i, outermost (the caller of inlined ones) first. */
static int location_frames(struct pprof_reader *rd, size_t i)
{
	const PProfile *p = rd->p;
	const PLocation *loc = p->location[i];
	ssize_t m = find_id(rd->maps, p->n_mapping, loc->mapping_id);
	const PMapping *map = m >= 0 ? p->mapping[m] : NULL;
	bool ok = true, kernel = !map && loc->address >= KERNEL_START;
	const char *path = map ? string_at(p, map->filename, &ok) : "", *base = strrchr(path, '/');
	size_t nl = loc->n_line ? loc->n_line : 1;

	base = base ? base + 1 : path;
	rd->loc_frames[i] = (int64_t)rd->nframes;
	rd->loc_nframes[i] = (uint32_t)nl;
	for (size_t l = nl; l-- > 0;) {
		struct flame_frame_desc d = { .module = kernel ? "[kernel]" : base };
		char label[1100];
		int64_t id;

		if (loc->n_line) {
			ssize_t fi = find_id(rd->funcs, p->n_function, loc->line[l]->function_id);
			const PFunction *fn = fi >= 0 ? p->function[fi] : NULL;

			if (!fn) {
				rd->why = "a line names a function that is not in the profile";
				return -EINVAL;
			}
			d.name = string_at(p, fn->name, &ok);
			if (!*d.name)
				d.name = string_at(p, fn->system_name, &ok);
			d.file = string_at(p, fn->filename, &ok);
			d.line = fn->start_line ? fn->start_line : loc->line[l]->line;
			d.type = l + 1 < nl ? "inlined" : kernel ? "kernel" : "native";
		} else {
			snprintf(label, sizeof(label), "%.1000s+0x%" PRIx64, *base ? base : "[unknown]",
				 map ? loc->address - map->memory_start + map->file_offset : loc->address);
			d.name = label;
			d.type = kernel ? "kernel" : "native";
		}
		if (!ok) {
			rd->why = "a string index is out of the string table";
			return -EINVAL;
		}
		id = flame_frame(rd->t->flame, &d);
		if (id < 0) {
			rd->why = "too many distinct frames";
			return (int)id;
		}
		rd->frames[rd->nframes++] = (uint32_t)id;
	}
	return 0;
}

/* The process frame of a sample: its process_name label (service.name as the module). */
static int64_t process_frame(struct pprof_reader *rd, const Perftools__Profiles__Sample *s)
{
	const char *name = "[unknown]", *service = "";
	bool ok = true;

	for (size_t k = 0; k < s->n_label; k++) {
		const char *key = string_at(rd->p, s->label[k]->key, &ok);

		if (!strcmp(key, "process_name"))
			name = string_at(rd->p, s->label[k]->str, &ok);
		else if (!strcmp(key, "service.name"))
			service = string_at(rd->p, s->label[k]->str, &ok);
	}
	if (!ok) {
		rd->why = "a label's string index is out of the string table";
		return -EINVAL;
	}
	return flame_frame(rd->t->flame, &(struct flame_frame_desc){
		.name = *name ? name : "[unknown]", .module = service, .type = "process" });
}

static int add_samples(struct pprof_reader *rd, struct read_info *info)
{
	const PProfile *p = rd->p;
	uint32_t *stack = malloc((READ_MAX_FRAMES + 1) * sizeof(*stack));
	int r = 0;

	if (!stack) {
		rd->why = "out of memory";
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n_sample && !r; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		int64_t proc = process_frame(rd, s);
		size_t n = 0;

		if (proc < 0) {
			r = (int)proc;
			break;
		}
		if (s->n_value != p->n_sample_type) {
			rd->why = "a sample's values do not match the sample types";
			r = -EINVAL;
			break;
		}
		if (s->value[rd->value] < 0) {
			rd->why = "a negative sample value";
			r = -EINVAL;
			break;
		}
		stack[n++] = (uint32_t)proc;
		/* Locations are leaf first: the stack is written root first. */
		for (size_t j = s->n_location_id; j-- > 0 && !r;) {
			ssize_t li = find_id(rd->locs, p->n_location, s->location_id[j]);

			if (li < 0) {
				rd->why = "a sample names a location that is not in the profile";
				r = -EINVAL;
			} else if (n + rd->loc_nframes[li] > READ_MAX_FRAMES) {
				rd->why = "more than 8192 frames in a stack";
				r = -EINVAL;
			} else {
				memcpy(stack + n, rd->frames + rd->loc_frames[li], rd->loc_nframes[li] * sizeof(*stack));
				n += rd->loc_nframes[li];
			}
		}
		if (r || !s->value[rd->value])
			continue;
		if (flame_add_stack(rd->t->flame, rd->t->view, stack, n, rd->t->slot, (uint64_t)s->value[rd->value]) ==
		    -ENOMEM) {
			rd->why = "out of memory";
			r = -ENOMEM;
		}
		info->total += (uint64_t)s->value[rd->value];
		info->stacks++;
	}
	free(stack);
	return r;
}

static int read_message(const PProfile *p, const struct read_target *t, struct read_info *info, const char **why)
{
	struct pprof_reader rd = { .p = p, .t = t };
	size_t nlines = 0;
	bool ok = true;
	int r = -ENOMEM;

	if (!p->n_sample_type) {
		*why = "no sample type";
		return -EINVAL;
	}
	/* The sample type asked for, by name, else the first. */
	for (size_t i = 0; t->sample_type && i < p->n_sample_type; i++)
		if (!strcmp(string_at(p, p->sample_type[i]->type, &ok), t->sample_type))
			rd.value = i;
	if (t->sample_type && strcmp(string_at(p, p->sample_type[rd.value]->type, &ok), t->sample_type)) {
		*why = "no such sample type in the profile (--sample-type)";
		return -EINVAL;
	}
	snprintf(info->sample_type, sizeof(info->sample_type), "%s/%s",
		 string_at(p, p->sample_type[rd.value]->type, &ok), string_at(p, p->sample_type[rd.value]->unit, &ok));
	if (!ok) {
		*why = "the sample type's string index is out of the string table";
		return -EINVAL;
	}
	for (size_t i = 0; i < p->n_location; i++)
		nlines += p->location[i]->n_line ? p->location[i]->n_line : 1;
	rd.locs = index_ids(p->n_location, loc_id, p);
	rd.funcs = index_ids(p->n_function, func_id, p);
	rd.maps = index_ids(p->n_mapping, map_id, p);
	rd.loc_frames = malloc((p->n_location + 1) * sizeof(*rd.loc_frames));
	rd.loc_nframes = malloc((p->n_location + 1) * sizeof(*rd.loc_nframes));
	rd.frames = malloc((nlines + 1) * sizeof(*rd.frames));
	rd.why = "out of memory";
	if (!rd.locs || !rd.funcs || !rd.maps || !rd.loc_frames || !rd.loc_nframes || !rd.frames)
		goto out;
	r = 0;
	for (size_t i = 0; i < p->n_location && !r; i++)
		r = location_frames(&rd, i);
	if (!r)
		r = add_samples(&rd, info);
out:
	if (r)
		*why = rd.why;
	free(rd.locs);
	free(rd.funcs);
	free(rd.maps);
	free(rd.loc_frames);
	free(rd.loc_nframes);
	free(rd.frames);
	return r;
}

int read_pprof(const uint8_t *data, size_t len, const struct read_target *t, struct read_info *info, char *err,
	       size_t errlen)
{
	uint8_t *raw = NULL;
	size_t rawlen = len;
	const char *why = NULL;
	PProfile *p;
	int r;

	memset(info, 0, sizeof(*info));
	if (len >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
		r = gunzip(data, len, &raw, &rawlen, &why);
		if (r) {
			snprintf(err, errlen, "%s", why);
			return r;
		}
		data = raw;
	}
	p = perftools__profiles__profile__unpack(NULL, rawlen, data);
	if (!p) {
		free(raw);
		snprintf(err, errlen, "not a pprof profile (the protobuf does not decode)");
		return -EINVAL;
	}
	r = read_message(p, t, info, &why);
	if (r)
		snprintf(err, errlen, "%s", why);
	else if (!info->total) {
		r = -EINVAL;
		snprintf(err, errlen, "empty profile: no sample has a value");
	}
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(raw);
	return r;
}
