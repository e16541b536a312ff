/*
 * OTLP profiles encoder. A request is built for a range of processes: every table entry the range
 * reaches is remapped from the profile's index to the request's own (dense, zero element first,
 * deduplicated on the request's values), then packed with protobuf-c. The protobuf-c structs point
 * into the profile's strings and timestamps: nothing is copied but indices.
 */
#include "output/otlp_encode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "profile/intern.h"
#include "output/output_file.h"
#include "otlp_profiles_service.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest PbRequest;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary PbDictionary;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles PbResourceProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles PbScopeProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile PbProfile;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType PbValueType;
typedef Opentelemetry__Proto__Profiles__V1development__Sample PbSample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping PbMapping;
typedef Opentelemetry__Proto__Profiles__V1development__Location PbLocation;
typedef Opentelemetry__Proto__Profiles__V1development__Line PbLine;
typedef Opentelemetry__Proto__Profiles__V1development__Function PbFunction;
typedef Opentelemetry__Proto__Profiles__V1development__Stack PbStack;
typedef Opentelemetry__Proto__Profiles__V1development__Link PbLink;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit PbKeyValueAndUnit;
typedef Opentelemetry__Proto__Common__V1__AnyValue PbAnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue PbKeyValue;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope PbScope;
typedef Opentelemetry__Proto__Resource__V1__Resource PbResource;

#define ANY_STRING OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE
#define ANY_INT OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE

/* Attributes each sample carries: thread.id, thread.name, cpu.logical_number. */
#define SAMPLE_ATTRS 3
/* Attributes each mapping carries at most: GNU build id, htlhash, Go build id. */
#define MAPPING_ATTRS 3
/* Bound on the keys of each dedup table of one request (the profile's own tables are smaller). */
#define ENCODE_MAX_KEYS (1u << 24)

/* Strings the encoder adds itself. */
enum cstr {
	CSTR_SAMPLES, CSTR_COUNT, CSTR_CPU, CSTR_NANOSECONDS, CSTR_THREAD_ID, CSTR_THREAD_NAME,
	CSTR_CPU_NUMBER, CSTR_FRAME_TYPE, CSTR_KERNEL, CSTR_NATIVE, CSTR_BUILD_ID_GNU, CSTR_HTLHASH, CSTR_OFF_CPU,
	CSTR_GO, CSTR_BUILD_ID_GO, NCSTR,
};
static const char *const cstr_text[NCSTR] = {
	"samples", "count", "cpu", "nanoseconds", "thread.id", "thread.name", "cpu.logical_number",
	"profile.frame.type", "kernel", "native", "process.executable.build_id.gnu",
	"process.executable.build_id.htlhash", "off_cpu", "go", "process.executable.build_id.go",
};

/* Profiles per process: on-CPU, and off-CPU when the process has waits (--off-cpu). */
#define PROFILES_PER_PROCESS 2

/* Process i's samples are p->samples[order[first[i] .. first[i + 1])]. */
struct by_process {
	uint32_t *first;
	uint32_t *order;
};

/* A request under construction for processes [begin, end). */
struct chunk {
	const struct profile *p;
	const struct otlp_encode_options *opts;

	/* profile index -> request index, 0 = not yet in the request */
	uint32_t *string_map, *function_map, *mapping_map, *location_map, *stack_map;
	struct intern *attr_keys, *mapping_keys, *location_keys, *stack_keys;

	char **strings; size_t nstrings;
	PbFunction *functions; PbFunction **function_ptrs; size_t nfunctions;
	PbMapping *mappings; PbMapping **mapping_ptrs; size_t nmappings;
	int32_t *mapping_attrs; size_t nmapping_attrs;
	PbLocation *locations; PbLocation **location_ptrs; size_t nlocations;
	int32_t *location_attrs; size_t nlocation_attrs;
	PbLine *lines; PbLine **line_ptrs; size_t nlines;
	PbStack *stacks; PbStack **stack_ptrs; size_t nstacks;
	int32_t *stack_locations; size_t nstack_locations;
	PbKeyValueAndUnit *attrs; PbKeyValueAndUnit **attr_ptrs; size_t nattrs;
	PbAnyValue *attr_values;
	PbLink zero_link; PbLink *link_ptr;

	PbResourceProfiles *rps; PbResourceProfiles **rp_ptrs; size_t nrps;
	PbResource *resources;
	PbKeyValue *kvs; PbKeyValue **kv_ptrs; PbAnyValue *kv_values; size_t nkvs;
	PbScopeProfiles *scopes; PbScopeProfiles **scope_ptrs;
	PbScope scope;
	PbProfile *profiles; PbProfile **profile_ptrs;
	uint8_t (*profile_ids)[16];
	PbValueType sample_type, period_type;
	PbSample *samples; PbSample **sample_ptrs; size_t nsamples;
	int32_t *sample_attrs; size_t nsample_attrs;
	uint64_t **merged; size_t nmerged; /* timestamp arrays of merged samples */

	int32_t cstr[NCSTR];  /* request string index of the encoder's own strings, 0 = not yet */
	PbDictionary dictionary;
	PbRequest request;
	uint64_t timestamps;

	/* The link table: profile link -> request index (0 = not yet), deduplicated on the ids. */
	uint32_t *link_map;
	struct intern *link_keys;
	PbLink *links; PbLink **link_ptrs; size_t nlinks;
	PbValueType off_cpu_type; /* off_cpu/nanoseconds: the second Profile's sample type */
};

static void *alloc_array(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static void chunk_free(struct chunk *c)
{
	free(c->string_map);
	free(c->function_map);
	free(c->mapping_map);
	free(c->location_map);
	free(c->stack_map);
	intern_free(c->attr_keys);
	intern_free(c->mapping_keys);
	intern_free(c->location_keys);
	intern_free(c->stack_keys);
	free(c->strings);
	free(c->functions);
	free(c->function_ptrs);
	free(c->mappings);
	free(c->mapping_ptrs);
	free(c->mapping_attrs);
	free(c->locations);
	free(c->location_ptrs);
	free(c->location_attrs);
	free(c->lines);
	free(c->line_ptrs);
	free(c->stacks);
	free(c->stack_ptrs);
	free(c->stack_locations);
	free(c->attrs);
	free(c->attr_ptrs);
	free(c->attr_values);
	free(c->rps);
	free(c->rp_ptrs);
	free(c->resources);
	free(c->kvs);
	free(c->kv_ptrs);
	free(c->kv_values);
	free(c->scopes);
	free(c->scope_ptrs);
	free(c->profiles);
	free(c->profile_ptrs);
	free(c->profile_ids);
	free(c->samples);
	free(c->sample_ptrs);
	free(c->sample_attrs);
	for (size_t i = 0; i < c->nmerged; i++)
		free(c->merged[i]);
	free(c->merged);
	free(c->link_map);
	intern_free(c->link_keys);
	free(c->links);
	free(c->link_ptrs);
	memset(c, 0, sizeof(*c));
}

/* Tables sized for the whole profile: a chunk never holds more than that. */
static int chunk_init(struct chunk *c, const struct profile *p, const struct otlp_encode_options *opts,
		      size_t nprocesses, size_t nsamples, size_t nkvs)
{
	size_t nstr = intern_count(p->strings), nstack_locations = 0, nlink_attrs = 0;
	/* 3: the frame types a location can have (kernel, native, go) */
	size_t max_attrs = 1 + SAMPLE_ATTRS * nsamples + 3 + MAPPING_ATTRS * p->nmappings;

	/* Each stack is mapped at most once per request: room for all of them, however they share. */
	for (size_t i = 0; i < p->nstacks; i++)
		nstack_locations += p->stacks[i].n;
	/* Room for every sample's link attributes (the whole profile's: a chunk has no more). */
	for (size_t i = 0; i < p->nsamples; i++)
		nlink_attrs += p->links[p->samples[i].link].nattributes;
	max_attrs += nlink_attrs;

	*c = (struct chunk){ .p = p, .opts = opts };
	c->string_map = alloc_array(nstr, sizeof(uint32_t));
	c->function_map = alloc_array(p->nfunctions, sizeof(uint32_t));
	c->mapping_map = alloc_array(p->nmappings, sizeof(uint32_t));
	c->location_map = alloc_array(p->nlocations, sizeof(uint32_t));
	c->stack_map = alloc_array(p->nstacks, sizeof(uint32_t));
	c->attr_keys = intern_new(ENCODE_MAX_KEYS);
	c->mapping_keys = intern_new(ENCODE_MAX_KEYS);
	c->location_keys = intern_new(ENCODE_MAX_KEYS);
	c->stack_keys = intern_new(ENCODE_MAX_KEYS);
	/* + the strings the encoder adds itself (sample and period types, attribute keys) */
	c->strings = alloc_array(nstr + NCSTR, sizeof(char *));
	c->functions = alloc_array(p->nfunctions, sizeof(PbFunction));
	c->function_ptrs = alloc_array(p->nfunctions, sizeof(PbFunction *));
	c->mappings = alloc_array(p->nmappings, sizeof(PbMapping));
	c->mapping_ptrs = alloc_array(p->nmappings, sizeof(PbMapping *));
	c->mapping_attrs = alloc_array(MAPPING_ATTRS * p->nmappings, sizeof(int32_t));
	c->locations = alloc_array(p->nlocations, sizeof(PbLocation));
	c->location_ptrs = alloc_array(p->nlocations, sizeof(PbLocation *));
	c->location_attrs = alloc_array(p->nlocations, sizeof(int32_t));
	c->lines = alloc_array(p->nlines, sizeof(PbLine));
	c->line_ptrs = alloc_array(p->nlines, sizeof(PbLine *));
	c->stacks = alloc_array(p->nstacks, sizeof(PbStack));
	c->stack_ptrs = alloc_array(p->nstacks, sizeof(PbStack *));
	c->stack_locations = alloc_array(nstack_locations, sizeof(int32_t));
	c->attrs = alloc_array(max_attrs, sizeof(PbKeyValueAndUnit));
	c->attr_ptrs = alloc_array(max_attrs, sizeof(PbKeyValueAndUnit *));
	c->attr_values = alloc_array(max_attrs, sizeof(PbAnyValue));
	c->rps = alloc_array(nprocesses, sizeof(PbResourceProfiles));
	c->rp_ptrs = alloc_array(nprocesses, sizeof(PbResourceProfiles *));
	c->resources = alloc_array(nprocesses, sizeof(PbResource));
	c->kvs = alloc_array(nkvs, sizeof(PbKeyValue));
	c->kv_ptrs = alloc_array(nkvs, sizeof(PbKeyValue *));
	c->kv_values = alloc_array(nkvs, sizeof(PbAnyValue));
	c->scopes = alloc_array(nprocesses, sizeof(PbScopeProfiles));
	c->scope_ptrs = alloc_array(nprocesses, sizeof(PbScopeProfiles *));
	c->profiles = alloc_array(PROFILES_PER_PROCESS * nprocesses, sizeof(PbProfile));
	c->profile_ptrs = alloc_array(PROFILES_PER_PROCESS * nprocesses, sizeof(PbProfile *));
	c->profile_ids = alloc_array(PROFILES_PER_PROCESS * nprocesses, 16);
	c->samples = alloc_array(nsamples, sizeof(PbSample));
	c->sample_ptrs = alloc_array(nsamples, sizeof(PbSample *));
	c->sample_attrs = alloc_array(SAMPLE_ATTRS * nsamples + nlink_attrs, sizeof(int32_t));
	c->link_map = alloc_array(p->nlinks, sizeof(uint32_t));
	c->link_keys = intern_new(ENCODE_MAX_KEYS);
	c->links = alloc_array(p->nlinks, sizeof(PbLink));
	c->link_ptrs = alloc_array(p->nlinks, sizeof(PbLink *));
	if (!c->string_map || !c->function_map || !c->mapping_map || !c->location_map || !c->stack_map ||
	    !c->attr_keys || !c->mapping_keys || !c->location_keys || !c->stack_keys || !c->strings ||
	    !c->functions || !c->function_ptrs || !c->mappings || !c->mapping_ptrs || !c->mapping_attrs ||
	    !c->locations || !c->location_ptrs || !c->location_attrs || !c->lines || !c->line_ptrs ||
	    !c->stacks || !c->stack_ptrs || !c->stack_locations || !c->attrs || !c->attr_ptrs ||
	    !c->attr_values || !c->rps || !c->rp_ptrs || !c->resources || !c->kvs || !c->kv_ptrs ||
	    !c->kv_values || !c->scopes || !c->scope_ptrs || !c->profiles || !c->profile_ptrs ||
	    !c->profile_ids || !c->samples || !c->sample_ptrs || !c->sample_attrs || !c->link_map ||
	    !c->link_keys || !c->links || !c->link_ptrs) {
		chunk_free(c);
		return -ENOMEM;
	}

	/* Zero elements first. */
	c->strings[c->nstrings++] = (char *)"";
	opentelemetry__proto__profiles__v1development__function__init(&c->functions[0]);
	c->function_ptrs[c->nfunctions++] = &c->functions[0];
	opentelemetry__proto__profiles__v1development__mapping__init(&c->mappings[0]);
	c->mapping_ptrs[c->nmappings++] = &c->mappings[0];
	opentelemetry__proto__profiles__v1development__location__init(&c->locations[0]);
	c->location_ptrs[c->nlocations++] = &c->locations[0];
	opentelemetry__proto__profiles__v1development__stack__init(&c->stacks[0]);
	c->stack_ptrs[c->nstacks++] = &c->stacks[0];
	opentelemetry__proto__profiles__v1development__key_value_and_unit__init(&c->attrs[0]);
	c->attr_ptrs[c->nattrs++] = &c->attrs[0];
	opentelemetry__proto__profiles__v1development__link__init(&c->zero_link);
	c->link_ptr = &c->zero_link;
	c->link_ptrs[c->nlinks++] = &c->zero_link;
	return 0;
}

static int32_t map_string(struct chunk *c, uint32_t id)
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
static int32_t const_string(struct chunk *c, enum cstr which)
{
	const char *s = cstr_text[which];
	int64_t id;

	if (c->cstr[which])
		return c->cstr[which];
	id = intern_find(c->p->strings, s, strlen(s) + 1);
	if (id > 0) {
		c->cstr[which] = map_string(c, (uint32_t)id);
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
static int64_t add_attr_key(struct chunk *c, int32_t key, bool is_int, int64_t value)
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

static int64_t add_attr(struct chunk *c, enum cstr key, bool is_int, int64_t value)
{
	return add_attr_key(c, const_string(c, key), is_int, value);
}

/* Request index of a profile link (0: none); links with the same ids share one Link. */
static int64_t map_link(struct chunk *c, uint32_t index)
{
	const struct pf_link *l = &c->p->links[index];
	uint8_t ids[24];
	int64_t id;
	int added;

	if (!index || c->link_map[index])
		return c->link_map[index];
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
	k.filename = map_string(c, m->filename);
	if (m->build_id) {
		id = add_attr(c, CSTR_BUILD_ID_GNU, false, map_string(c, m->build_id));
		if (id < 0)
			return id;
		k.attrs[nattrs++] = (int32_t)id;
	}
	if (m->htlhash) {
		id = add_attr(c, CSTR_HTLHASH, false, map_string(c, m->htlhash));
		if (id < 0)
			return id;
		k.attrs[nattrs++] = (int32_t)id;
	}
	if (m->go_build_id) {
		id = add_attr(c, CSTR_BUILD_ID_GO, false, map_string(c, m->go_build_id));
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
	out->name_strindex = map_string(c, f->name);
	out->system_name_strindex = map_string(c, f->system_name);
	out->filename_strindex = map_string(c, f->filename);
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
	id = add_attr(c, CSTR_FRAME_TYPE, false,
		      const_string(c, loc->type == PF_FRAME_KERNEL ? CSTR_KERNEL
				      : loc->type == PF_FRAME_GO ? CSTR_GO : CSTR_NATIVE));
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

static int64_t map_stack(struct chunk *c, uint32_t index)
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

static void set_key_value(PbKeyValue *kv, PbAnyValue *v, const char *key)
{
	opentelemetry__proto__common__v1__key_value__init(kv);
	opentelemetry__proto__common__v1__any_value__init(v);
	kv->key = (char *)key;
	kv->value = v;
}

static bool process_has_key(const struct profile *p, const struct pf_process *proc, const char *key)
{
	for (uint32_t i = 0; i < proc->nattributes; i++)
		if (!strcmp(profile_string(p, p->process_attributes[proc->first_attribute + i].key), key))
			return true;
	return false;
}

/* The resource of one process: its own attributes, then the configured ones it lacks. */
static void fill_resource(struct chunk *c, PbResource *res, const struct pf_process *proc)
{
	const struct profile *p = c->p;

	opentelemetry__proto__resource__v1__resource__init(res);
	res->attributes = &c->kv_ptrs[c->nkvs];
	for (uint32_t i = 0; i < proc->nattributes; i++) {
		const struct pf_attribute *a = &p->process_attributes[proc->first_attribute + i];
		PbKeyValue *kv = &c->kvs[c->nkvs];
		PbAnyValue *v = &c->kv_values[c->nkvs];

		set_key_value(kv, v, profile_string(p, a->key));
		if (a->type == PF_ATTR_INT) {
			v->value_case = ANY_INT;
			v->int_value = a->int_value;
		} else {
			v->value_case = ANY_STRING;
			v->string_value = (char *)profile_string(p, a->string_value);
		}
		c->kv_ptrs[c->nkvs++] = kv;
		res->n_attributes++;
	}
	for (size_t i = 0; i < c->opts->nresource_attrs; i++) {
		const struct otlp_attr *a = &c->opts->resource_attrs[i];
		PbKeyValue *kv = &c->kvs[c->nkvs];
		PbAnyValue *v = &c->kv_values[c->nkvs];

		if (process_has_key(p, proc, a->key))
			continue;
		set_key_value(kv, v, a->key);
		v->value_case = ANY_STRING;
		v->string_value = (char *)a->value;
		c->kv_ptrs[c->nkvs++] = kv;
		res->n_attributes++;
	}
}

/* Sample identity in one Profile: stack, attributes, and the profile link (which names the request
 * link and the link's attributes). */
struct sample_key {
	int32_t stack;
	int32_t attrs[SAMPLE_ATTRS];
	int32_t link;
	uint32_t profile_link;
};

/* The sorted union of two sorted timestamp arrays, owned by the chunk. NULL on failure. */
static uint64_t *merge_timestamps(struct chunk *c, const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
	uint64_t *out = malloc((na + nb) * sizeof(*out)), **grown;
	size_t i = 0, j = 0, k = 0;

	grown = out ? realloc(c->merged, (c->nmerged + 1) * sizeof(*grown)) : NULL;
	if (!grown) {
		free(out);
		return NULL;
	}
	c->merged = grown;
	c->merged[c->nmerged++] = out;
	while (i < na || j < nb)
		out[k++] = j >= nb || (i < na && a[i] <= b[j]) ? a[i++] : b[j++];
	return out;
}

/* Keep a merged array for chunk_free(). */
static int keep_merged(struct chunk *c, void *array)
{
	uint64_t **grown = realloc(c->merged, (c->nmerged + 1) * sizeof(*grown));

	if (!grown) {
		free(array);
		return -ENOMEM;
	}
	c->merged = grown;
	c->merged[c->nmerged++] = array;
	return 0;
}

/* Merge off-CPU sample s into out: timestamps and values as pairs, in time order. */
static int merge_off_cpu(struct chunk *c, PbSample *out, const struct pf_sample *s)
{
	size_t na = out->n_timestamps_unix_nano, nb = s->count, i = 0, j = 0, k = 0;
	uint64_t *ts = malloc((na + nb) * sizeof(*ts));
	int64_t *values = malloc((na + nb) * sizeof(*values));

	if (!ts || !values) {
		free(ts);
		free(values);
		return -ENOMEM;
	}
	while (i < na || j < nb) {
		bool left = j >= nb || (i < na && out->timestamps_unix_nano[i] <= s->timestamps[j]);

		ts[k] = left ? out->timestamps_unix_nano[i] : s->timestamps[j];
		values[k++] = left ? out->values[i++] : (int64_t)s->values[j++];
	}
	if (keep_merged(c, ts) || keep_merged(c, values))
		return -ENOMEM;
	out->timestamps_unix_nano = ts;
	out->values = values;
	out->n_timestamps_unix_nano = out->n_values = na + nb;
	return 0;
}

/*
 * Add one profile sample to the Profile being built. Two profile samples can meet in one
 * request sample when their stacks differ only in ways the request does not keep (one file
 * mapped twice in a process): their timestamps are merged, so sample identity stays unique.
 */
static int add_sample(struct chunk *c, struct intern *ids, const struct pf_sample *s)
{
	struct sample_key k;
	PbSample *out;
	int64_t id;
	int added;

	memset(&k, 0, sizeof(k));
	if ((id = map_stack(c, s->stack)) < 0)
		return (int)id;
	k.stack = (int32_t)id;
	if ((id = add_attr(c, CSTR_THREAD_ID, true, s->tid)) < 0)
		return (int)id;
	k.attrs[0] = (int32_t)id;
	if ((id = add_attr(c, CSTR_THREAD_NAME, false, map_string(c, s->thread_name))) < 0)
		return (int)id;
	k.attrs[1] = (int32_t)id;
	if ((id = add_attr(c, CSTR_CPU_NUMBER, true, s->cpu)) < 0)
		return (int)id;
	k.attrs[2] = (int32_t)id;
	if ((id = map_link(c, s->link)) < 0)
		return (int)id;
	k.link = (int32_t)id;
	k.profile_link = s->link;
	if ((id = intern_put(ids, &k, sizeof(k), &added)) < 0)
		return (int)id;
	c->timestamps += s->count;
	if (!added && s->off_cpu)
		return merge_off_cpu(c, c->sample_ptrs[c->nsamples - intern_count(ids) + (size_t)id], s);
	if (!added) {
		/* The samples of this Profile start at sample_ptrs[first]; id counts from there. */
		out = c->sample_ptrs[c->nsamples - intern_count(ids) + (size_t)id];
		out->timestamps_unix_nano = merge_timestamps(c, out->timestamps_unix_nano, out->n_timestamps_unix_nano,
							     s->timestamps, s->count);
		if (!out->timestamps_unix_nano)
			return -ENOMEM;
		out->n_timestamps_unix_nano += s->count;
		return 0;
	}
	out = &c->samples[c->nsamples];
	opentelemetry__proto__profiles__v1development__sample__init(out);
	out->stack_index = k.stack;
	out->attribute_indices = &c->sample_attrs[c->nsample_attrs];
	memcpy(out->attribute_indices, k.attrs, sizeof(k.attrs));
	out->n_attribute_indices = SAMPLE_ATTRS;
	c->nsample_attrs += SAMPLE_ATTRS;
	out->link_index = k.link;
	/* The attributes the thread published with its span: one per key, string values. */
	for (uint32_t i = 0; s->link && i < c->p->links[s->link].nattributes; i++) {
		const struct pf_attribute *a = &c->p->link_attributes[c->p->links[s->link].first_attribute + i];

		if ((id = add_attr_key(c, map_string(c, a->key), false, map_string(c, a->string_value))) < 0)
			return (int)id;
		c->sample_attrs[c->nsample_attrs++] = (int32_t)id;
		out->n_attribute_indices++;
	}
	/* Timestamps only: each counts one sample (one shape for the whole profile). */
	out->timestamps_unix_nano = s->timestamps;
	out->n_timestamps_unix_nano = s->count;
	if (s->off_cpu) {
		/* Off-CPU: values and timestamps of equal length, the value the time away in ns. */
		out->values = (int64_t *)s->values;
		out->n_values = s->count;
	}
	c->sample_ptrs[c->nsamples++] = out;
	return 0;
}

/* A random profile id for c->profiles[k] (of process). */
static void set_profile_id(struct chunk *c, size_t k, uint32_t process)
{
	if (getrandom(c->profile_ids[k], 16, GRND_NONBLOCK) != 16) {
		/* No entropy yet (early boot): an id from the clock, the pid and the slot is unique enough. */
		uint64_t seed[2] = { c->p->time_unix_ns + k, c->p->processes[process].pid };

		memcpy(c->profile_ids[k], seed, 16);
	}
	c->profiles[k].profile_id.data = c->profile_ids[k];
	c->profiles[k].profile_id.len = 16;
}

/* The samples of process in prof: on-CPU ones, or with off_cpu the waits; its time covers them. */
static int fill_profile(struct chunk *c, PbProfile *prof, uint32_t process, const struct by_process *bp,
			bool off_cpu)
{
	const struct profile *p = c->p;
	uint64_t start = p->time_unix_ns, end = p->time_unix_ns + p->duration_ns;
	struct intern *ids = intern_new(ENCODE_MAX_KEYS);
	int r = 0;

	if (!ids)
		return -ENOMEM;
	prof->samples = &c->sample_ptrs[c->nsamples];
	for (uint32_t j = bp->first[process]; j < bp->first[process + 1]; j++) {
		const struct pf_sample *s = &p->samples[bp->order[j]];

		if (s->off_cpu != off_cpu)
			continue;
		if ((r = add_sample(c, ids, s)))
			break;
		/* Timestamps are sorted; the interval must contain them all. */
		if (s->count && s->timestamps[0] < start)
			start = s->timestamps[0];
		if (s->count && s->timestamps[s->count - 1] >= end)
			end = s->timestamps[s->count - 1] + 1;
	}
	intern_free(ids);
	if (r)
		return r;
	prof->n_samples = (size_t)(c->sample_ptrs + c->nsamples - prof->samples);
	prof->time_unix_nano = start;
	prof->duration_nano = end - start;
	return 0;
}

/*
 * The process's second Profile: its off-CPU samples, sample type off_cpu/nanoseconds, a value (ns
 * away, scaled by the sampling) and a timestamp (when the thread ran again) per wait. None when the
 * process has no off-CPU sample.
 */
static int add_off_cpu_profile(struct chunk *c, uint32_t process, const struct by_process *bp,
			       PbScopeProfiles *sp)
{
	size_t k = PROFILES_PER_PROCESS * (size_t)c->nrps + 1;
	PbProfile *prof = &c->profiles[k];
	int r;

	opentelemetry__proto__profiles__v1development__profile__init(prof);
	prof->sample_type = &c->off_cpu_type;
	set_profile_id(c, k, process);
	if ((r = fill_profile(c, prof, process, bp, true)))
		return r;
	if (prof->n_samples)
		sp->profiles[sp->n_profiles++] = prof;
	return 0;
}

static int add_process(struct chunk *c, uint32_t process, const struct by_process *bp)
{
	const struct profile *p = c->p;
	size_t i = c->nrps;
	PbResourceProfiles *rp = &c->rps[i];
	PbScopeProfiles *sp = &c->scopes[i];
	PbProfile *prof = &c->profiles[PROFILES_PER_PROCESS * i];
	int r;

	opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
	opentelemetry__proto__profiles__v1development__scope_profiles__init(sp);
	opentelemetry__proto__profiles__v1development__profile__init(prof);
	fill_resource(c, &c->resources[i], &p->processes[process]);
	rp->resource = &c->resources[i];
	rp->scope_profiles = &c->scope_ptrs[i];
	rp->n_scope_profiles = 1;
	c->scope_ptrs[i] = sp;
	sp->scope = &c->scope;
	sp->profiles = &c->profile_ptrs[PROFILES_PER_PROCESS * i];

	prof->sample_type = &c->sample_type;
	prof->period_type = &c->period_type;
	prof->period = (int64_t)p->period_ns;
	set_profile_id(c, PROFILES_PER_PROCESS * i, process);
	if ((r = fill_profile(c, prof, process, bp, false)))
		return r;
	/* A process that only waited has no on-CPU Profile. */
	if (prof->n_samples || !p->off_cpu_count)
		sp->profiles[sp->n_profiles++] = prof;
	if (p->off_cpu_count && (r = add_off_cpu_profile(c, process, bp, sp)))
		return r;
	c->rp_ptrs[c->nrps++] = rp;
	return 0;
}

/* Build the request for processes procs[0 .. n) in c (initialised by the caller). */
static int chunk_build(struct chunk *c, const uint32_t *procs, size_t n, const struct by_process *bp)
{
	PbDictionary *d = &c->dictionary;
	int r;

	opentelemetry__proto__common__v1__instrumentation_scope__init(&c->scope);
	c->scope.name = (char *)"otelprofd";
	c->scope.version = (char *)OTELPROFD_VERSION;
	opentelemetry__proto__profiles__v1development__value_type__init(&c->sample_type);
	opentelemetry__proto__profiles__v1development__value_type__init(&c->period_type);
	c->sample_type.type_strindex = const_string(c, CSTR_SAMPLES);
	c->sample_type.unit_strindex = const_string(c, CSTR_COUNT);
	c->period_type.type_strindex = const_string(c, CSTR_CPU);
	c->period_type.unit_strindex = const_string(c, CSTR_NANOSECONDS);
	opentelemetry__proto__profiles__v1development__value_type__init(&c->off_cpu_type);
	if (c->p->off_cpu_count) {
		c->off_cpu_type.type_strindex = const_string(c, CSTR_OFF_CPU);
		c->off_cpu_type.unit_strindex = const_string(c, CSTR_NANOSECONDS);
	}
	for (size_t i = 0; i < n; i++)
		if ((r = add_process(c, procs[i], bp)))
			return r;

	opentelemetry__proto__profiles__v1development__profiles_dictionary__init(d);
	d->mapping_table = c->mapping_ptrs;
	d->n_mapping_table = c->nmappings;
	d->location_table = c->location_ptrs;
	d->n_location_table = c->nlocations;
	d->function_table = c->function_ptrs;
	d->n_function_table = c->nfunctions;
	d->link_table = c->link_ptrs;
	d->n_link_table = c->nlinks;
	d->string_table = c->strings;
	d->n_string_table = c->nstrings;
	d->attribute_table = c->attr_ptrs;
	d->n_attribute_table = c->nattrs;
	d->stack_table = c->stack_ptrs;
	d->n_stack_table = c->nstacks;
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(&c->request);
	c->request.resource_profiles = c->rp_ptrs;
	c->request.n_resource_profiles = c->nrps;
	c->request.dictionary = d;
	return 0;
}

static int batch_append(struct otlp_batch *b, struct chunk *c, size_t size)
{
	struct otlp_message *grown = realloc(b->messages, (b->nmessages + 1) * sizeof(*grown));
	uint8_t *data = malloc(size ? size : 1);

	if (!grown || !data) {
		if (grown)
			b->messages = grown;
		free(data);
		return -ENOMEM;
	}
	b->messages = grown;
	protobuf_c_message_pack(&c->request.base, data);
	b->messages[b->nmessages++] = (struct otlp_message){
		.data = data, .len = size, .nresources = c->nrps, .nsamples = c->timestamps,
	};
	return 0;
}

/* Encode procs[0 .. n) as one request, or as halves when it is too large. */
static int encode_range(const struct profile *p, const struct otlp_encode_options *opts,
			const struct by_process *bp, const uint32_t *procs, size_t n, struct otlp_batch *out)
{
	size_t nsamples = 0, nkvs = 0, size;
	struct chunk c;
	int r;

	for (size_t i = 0; i < n; i++) {
		nsamples += bp->first[procs[i] + 1] - bp->first[procs[i]];
		nkvs += p->processes[procs[i]].nattributes + opts->nresource_attrs;
	}
	if ((r = chunk_init(&c, p, opts, n, nsamples, nkvs)))
		return r;
	if ((r = chunk_build(&c, procs, n, bp)))
		goto out;
	size = protobuf_c_message_get_packed_size(&c.request.base);
	if (!opts->max_message_size || size <= opts->max_message_size) {
		r = batch_append(out, &c, size);
	} else if (n > 1) {
		chunk_free(&c);
		r = encode_range(p, opts, bp, procs, n / 2, out);
		return r ? r : encode_range(p, opts, bp, procs + n / 2, n - n / 2, out);
	} else {
		out->dropped_resources++;
		out->dropped_samples += c.timestamps;
	}
out:
	chunk_free(&c);
	return r;
}

/* Samples grouped by process (a counting sort), and the processes that have any. */
static int group_by_process(const struct profile *p, struct by_process *bp, uint32_t **procs, size_t *nprocs)
{
	uint32_t *next;

	bp->first = calloc(p->nprocesses + 1, sizeof(uint32_t));
	bp->order = alloc_array(p->nsamples, sizeof(uint32_t));
	next = calloc(p->nprocesses + 1, sizeof(uint32_t));
	*procs = alloc_array(p->nprocesses, sizeof(uint32_t));
	if (!bp->first || !bp->order || !next || !*procs) {
		free(next);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nsamples; i++)
		bp->first[p->samples[i].process + 1]++;
	for (size_t i = 0; i < p->nprocesses; i++)
		bp->first[i + 1] += bp->first[i];
	memcpy(next, bp->first, (p->nprocesses + 1) * sizeof(uint32_t));
	for (size_t i = 0; i < p->nsamples; i++)
		bp->order[next[p->samples[i].process]++] = (uint32_t)i;
	*nprocs = 0;
	for (uint32_t i = 1; i < p->nprocesses; i++)
		if (bp->first[i + 1] > bp->first[i])
			(*procs)[(*nprocs)++] = i;
	free(next);
	return 0;
}

int otlp_encode(const struct profile *p, const struct otlp_encode_options *options, struct otlp_batch *out)
{
	struct by_process bp = { 0 };
	uint32_t *procs = NULL;
	size_t nprocs = 0;
	int r;

	*out = (struct otlp_batch){ 0 };
	r = group_by_process(p, &bp, &procs, &nprocs);
	if (!r && nprocs)
		r = encode_range(p, options, &bp, procs, nprocs, out);
	free(bp.first);
	free(bp.order);
	free(procs);
	if (r)
		otlp_batch_free(out);
	return r;
}

void otlp_batch_free(struct otlp_batch *batch)
{
	if (!batch)
		return;
	for (size_t i = 0; i < batch->nmessages; i++)
		free(batch->messages[i].data);
	free(batch->messages);
	*batch = (struct otlp_batch){ 0 };
}

int otlp_write_file(const struct profile *p, const struct otlp_encode_options *options, const char *path)
{
	struct otlp_encode_options unbounded = *options;
	struct output_file *f = NULL;
	struct otlp_batch batch;
	FILE *out;
	int r;

	unbounded.max_message_size = 0;
	if ((r = otlp_encode(p, &unbounded, &batch)))
		return r;
	f = output_file_open(path);
	if (!f) {
		r = -errno;
		goto out;
	}
	out = output_file_stream(f);
	/* An empty profile is an empty request: zero bytes, which decodes as one. */
	if (batch.nmessages && fwrite(batch.messages[0].data, 1, batch.messages[0].len, out) != batch.messages[0].len) {
		r = -errno;
		goto out;
	}
	r = output_file_commit(f);
	f = NULL;
out:
	output_file_abort(f);
	otlp_batch_free(&batch);
	return r;
}
