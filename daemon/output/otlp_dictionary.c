// SPDX-License-Identifier: Apache-2.0
/*
 * The OTLP encoder's dictionary (see otlp_encode_internal.h): each table entry a request reaches is
 * remapped from the profile's index to the request's own, dense with the zero element first and
 * deduplicated on the request's values (two profile entries can differ only in what the request does
 * not keep). The trace links of samples (OTEP 4947) go to link_table, deduplicated on their ids.
 */
#include "output/otlp_encode_internal.h"

#include <stddef.h>
#include <string.h>

static const char *const cstr_text[NCSTR] = {
	"samples", "count", "cpu", "nanoseconds", "thread.id", "thread.name", "cpu.logical_number",
	"profile.frame.type", "kernel", "native", "process.executable.build_id.gnu",
	"process.executable.build_id.htlhash", "off_cpu", "go", "process.executable.build_id.go",
	"cpython", "alloc_objects", "alloc_space", "inuse_objects", "inuse_space", "bytes",
};

int32_t otlp__map_string(struct chunk *c, uint32_t id)
{
	if (!id)
		return 0;
	if (!c->string_map[id]) {
		c->string_map[id] = (uint32_t)c->nstrings;
		c->strings[c->nstrings++] = (char *)profile_string(c->p, id);
	}
	return (int32_t)c->string_map[id];
}

/* Request string index of one of the encoder's strings; shared with the profile's when equal. */
int32_t otlp__const_string(struct chunk *c, enum cstr which)
{
	const char *s = cstr_text[which];
	int64_t id;

	if (c->cstr[which])
		return c->cstr[which];
	id = intern_find(c->p->strings, s, strlen(s) + 1);
	if (id > 0) {
		c->cstr[which] = otlp__map_string(c, (uint32_t)id);
	} else {
		c->cstr[which] = (int32_t)c->nstrings;
		c->strings[c->nstrings++] = (char *)s;
	}
	return c->cstr[which];
}

struct attr_key {
	int32_t key;
	uint32_t is_int;
	int64_t value; /* int value, or the request string index of the string value */
};

/*
 * Attribute table index of (key, value): an int, or a string given by its request string index.
 * String values are written inline (string_value), which every receiver reads.
 */
int64_t otlp__add_attr_key(struct chunk *c, int32_t key, bool is_int, int64_t value)
{
	struct attr_key k = { .key = key, .is_int = is_int, .value = value };
	PbKeyValueAndUnit *kv;
	PbAnyValue *v;
	int64_t id;
	int added;

	id = intern_put(c->attr_keys, &k, sizeof(k), &added);
	if (id < 0 || !added)
		return id < 0 ? id : id + 1;
	kv = &c->attrs[c->nattrs];
	v = &c->attr_values[c->nattrs];
	opentelemetry__proto__profiles__v1development__key_value_and_unit__init(kv);
	opentelemetry__proto__common__v1__any_value__init(v);
	kv->key_strindex = k.key;
	kv->value = v;
	if (is_int) {
		v->value_case = ANY_INT;
		v->int_value = value;
	} else {
		v->value_case = ANY_STRING;
		v->string_value = c->strings[value];
	}
	c->attr_ptrs[c->nattrs++] = kv;
	return id + 1;
}

int64_t otlp__add_attr(struct chunk *c, enum cstr key, bool is_int, int64_t value)
{
	return otlp__add_attr_key(c, otlp__const_string(c, key), is_int, value);
}

/* Request index of a profile link (0: none); links with the same ids share one Link. */
int64_t otlp__map_link(struct chunk *c, uint32_t index)
{
	const struct pf_link *l = &c->p->links[index];
	uint8_t ids[24];
	int64_t id;
	int added;

	if (!index || c->link_map[index] || profile_link_untraced(l))
		return index ? c->link_map[index] : 0; /* zero ids: attributes only, no Link */
	memcpy(ids, l->trace_id, 16);
	memcpy(ids + 16, l->span_id, 8);
	id = intern_put(c->link_keys, ids, sizeof(ids), &added);
	if (id < 0)
		return id;
	if (added) {
		PbLink *out = &c->links[c->nlinks];

		opentelemetry__proto__profiles__v1development__link__init(out);
		out->trace_id.data = (uint8_t *)l->trace_id;
		out->trace_id.len = 16;
		out->span_id.data = (uint8_t *)l->span_id;
		out->span_id.len = 8;
		c->link_ptrs[c->nlinks++] = out;
	}
	c->link_map[index] = (uint32_t)id + 1;
	return id + 1;
}

struct mapping_key {
	uint64_t start, limit, offset;
	int32_t filename;
	int32_t attrs[MAPPING_ATTRS];
};

static int64_t map_mapping(struct chunk *c, uint32_t index)
{
	const struct pf_mapping *m = &c->p->mappings[index];
	struct mapping_key k;
	unsigned nattrs = 0;
	PbMapping *out;
	int64_t id;
	int added;

	if (!index || c->mapping_map[index])
		return c->mapping_map[index];
	memset(&k, 0, sizeof(k)); /* the key is hashed as bytes: padding included */
	k.start = m->memory_start;
	k.limit = m->memory_limit;
	k.offset = m->file_offset;
	k.filename = otlp__map_string(c, m->filename);
	if (m->build_id) {
		id = otlp__add_attr(c, CSTR_BUILD_ID_GNU, false, otlp__map_string(c, m->build_id));
		if (id < 0)
			return id;
		k.attrs[nattrs++] = (int32_t)id;
	}
	if (m->htlhash) {
		id = otlp__add_attr(c, CSTR_HTLHASH, false, otlp__map_string(c, m->htlhash));
		if (id < 0)
			return id;
		k.attrs[nattrs++] = (int32_t)id;
	}
	if (m->go_build_id) {
		id = otlp__add_attr(c, CSTR_BUILD_ID_GO, false, otlp__map_string(c, m->go_build_id));
		if (id < 0)
			return id;
		k.attrs[nattrs++] = (int32_t)id;
	}
	id = intern_put(c->mapping_keys, &k, sizeof(k), &added);
	if (id < 0)
		return id;
	if (added) {
		out = &c->mappings[c->nmappings];
		opentelemetry__proto__profiles__v1development__mapping__init(out);
		out->memory_start = k.start;
		out->memory_limit = k.limit;
		out->file_offset = k.offset;
		out->filename_strindex = k.filename;
		out->attribute_indices = &c->mapping_attrs[c->nmapping_attrs];
		out->n_attribute_indices = nattrs;
		memcpy(out->attribute_indices, k.attrs, nattrs * sizeof(int32_t));
		c->nmapping_attrs += nattrs;
		c->mapping_ptrs[c->nmappings++] = out;
	}
	c->mapping_map[index] = (uint32_t)id + 1;
	return id + 1;
}

static int32_t map_function(struct chunk *c, uint32_t index)
{
	const struct pf_function *f = &c->p->functions[index];
	PbFunction *out;

	if (!index || c->function_map[index])
		return (int32_t)c->function_map[index];
	/* Profile functions are deduplicated on their strings, which map 1:1: no second check. */
	out = &c->functions[c->nfunctions];
	opentelemetry__proto__profiles__v1development__function__init(out);
	out->name_strindex = otlp__map_string(c, f->name);
	out->system_name_strindex = otlp__map_string(c, f->system_name);
	out->filename_strindex = otlp__map_string(c, f->filename);
	out->start_line = f->start_line;
	c->function_ptrs[c->nfunctions] = out;
	c->function_map[index] = (uint32_t)c->nfunctions;
	return (int32_t)c->nfunctions++;
}

/* The key of a request location: mapping, address, frame type and its lines. */
struct location_key {
	int32_t mapping, type_attr;
	uint64_t address;
	struct {
		int32_t function, pad;
		int64_t line, column;
	} lines[SYM_MAX_INLINE];
};

static int64_t map_location(struct chunk *c, uint32_t index)
{
	const struct pf_location *loc = &c->p->locations[index];
	struct location_key k;
	unsigned nlines = loc->nlines < SYM_MAX_INLINE ? loc->nlines : SYM_MAX_INLINE;
	size_t klen = offsetof(struct location_key, lines) + nlines * sizeof(k.lines[0]);
	int64_t id;
	int added;

	if (!index || c->location_map[index])
		return c->location_map[index];
	memset(&k, 0, sizeof(k));
	id = map_mapping(c, loc->mapping);
	if (id < 0)
		return id;
	k.mapping = (int32_t)id;
	k.address = loc->file_address;
	id = otlp__add_attr(c, CSTR_FRAME_TYPE, false,
		      otlp__const_string(c, loc->type == PF_FRAME_KERNEL ? CSTR_KERNEL
				      : loc->type == PF_FRAME_GO ? CSTR_GO
				      : loc->type == PF_FRAME_CPYTHON ? CSTR_CPYTHON : CSTR_NATIVE));
	if (id < 0)
		return id;
	k.type_attr = (int32_t)id;
	for (unsigned i = 0; i < nlines; i++) {
		const struct pf_line *l = &c->p->lines[loc->first_line + i];

		k.lines[i].function = map_function(c, l->function);
		k.lines[i].line = l->line;
		k.lines[i].column = l->column;
	}
	id = intern_put(c->location_keys, &k, klen, &added);
	if (id < 0)
		return id;
	if (added) {
		PbLocation *out = &c->locations[c->nlocations];

		opentelemetry__proto__profiles__v1development__location__init(out);
		out->mapping_index = k.mapping;
		out->address = k.address;
		out->lines = &c->line_ptrs[c->nlines];
		out->n_lines = nlines;
		for (unsigned i = 0; i < nlines; i++) {
			PbLine *line = &c->lines[c->nlines];

			opentelemetry__proto__profiles__v1development__line__init(line);
			line->function_index = k.lines[i].function;
			line->line = k.lines[i].line;
			line->column = k.lines[i].column;
			c->line_ptrs[c->nlines++] = line;
		}
		out->attribute_indices = &c->location_attrs[c->nlocation_attrs++];
		out->attribute_indices[0] = k.type_attr;
		out->n_attribute_indices = 1;
		c->location_ptrs[c->nlocations++] = out;
	}
	c->location_map[index] = (uint32_t)id + 1;
	return id + 1;
}

int64_t otlp__map_stack(struct chunk *c, uint32_t index)
{
	const struct pf_stack *st = &c->p->stacks[index];
	int32_t *locs = &c->stack_locations[c->nstack_locations];
	int64_t id;
	int added;

	if (!index || c->stack_map[index])
		return c->stack_map[index];
	for (uint32_t i = 0; i < st->n; i++) {
		int64_t l = map_location(c, c->p->stack_locations[st->first + i]);

		if (l < 0)
			return l;
		locs[i] = (int32_t)l;
	}
	id = intern_put(c->stack_keys, locs, st->n * sizeof(int32_t), &added);
	if (id < 0)
		return id;
	if (added) {
		PbStack *out = &c->stacks[c->nstacks];

		opentelemetry__proto__profiles__v1development__stack__init(out);
		out->location_indices = locs;
		out->n_location_indices = st->n;
		c->nstack_locations += st->n;
		c->stack_ptrs[c->nstacks++] = out;
	}
	c->stack_map[index] = (uint32_t)id + 1;
	return id + 1;
}
