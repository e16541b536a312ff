// SPDX-License-Identifier: Apache-2.0
/*
 * OTLP profiles encoder. A request is built for a range of processes: every table entry the range
 * reaches is remapped from the profile's index to the request's own (dense, zero element first,
 * deduplicated on the request's values), then packed with protobuf-c. The protobuf-c structs point
 * into the profile's strings and timestamps: nothing is copied but indices.
 * This file holds a request's tables (struct chunk), assembles and sizes it, splits it by resource
 * and writes the batch or the file; the dictionary is otlp_dictionary.c, the Profiles otlp_profile.c.
 */
#include "output/otlp_encode_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/output_file.h"

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
	c->sample_type.type_strindex = otlp__const_string(c, CSTR_SAMPLES);
	c->sample_type.unit_strindex = otlp__const_string(c, CSTR_COUNT);
	c->period_type.type_strindex = otlp__const_string(c, CSTR_CPU);
	c->period_type.unit_strindex = otlp__const_string(c, CSTR_NANOSECONDS);
	opentelemetry__proto__profiles__v1development__value_type__init(&c->off_cpu_type);
	if (c->p->off_cpu_count) {
		c->off_cpu_type.type_strindex = otlp__const_string(c, CSTR_OFF_CPU);
		c->off_cpu_type.unit_strindex = otlp__const_string(c, CSTR_NANOSECONDS);
	}
	for (int k = 0; k < HEAP_PROFILES; k++) {
		opentelemetry__proto__profiles__v1development__value_type__init(&c->heap_types[k]);
		if (c->p->alloc_enabled) {
			c->heap_types[k].type_strindex = otlp__const_string(c, (enum cstr)(CSTR_ALLOC_OBJECTS + k));
			c->heap_types[k].unit_strindex = otlp__const_string(c, k % 2 ? CSTR_BYTES : CSTR_COUNT);
		}
	}
	for (size_t i = 0; i < n; i++)
		if ((r = otlp__add_process(c, procs[i], bp)))
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
		/* A heap sample is in two Profiles: its objects' and its bytes'. */
		for (uint32_t j = bp->first[procs[i]]; p->alloc_enabled && j < bp->first[procs[i] + 1]; j++)
			nsamples += p->samples[bp->order[j]].heap != PF_HEAP_NONE;
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

int otlp_write(const struct profile *p, const struct otlp_encode_options *options, FILE *out)
{
	struct otlp_encode_options unbounded = *options;
	struct otlp_batch batch;
	int r;

	unbounded.max_message_size = 0;
	if ((r = otlp_encode(p, &unbounded, &batch)))
		return r;
	/* An empty profile is an empty request: zero bytes, which decodes as one. */
	if (batch.nmessages && fwrite(batch.messages[0].data, 1, batch.messages[0].len, out) != batch.messages[0].len)
		r = -errno;
	otlp_batch_free(&batch);
	return r;
}

int otlp_write_file(const struct profile *p, const struct otlp_encode_options *options, const char *path)
{
	struct output_file *f = output_file_open(path);
	int r;

	if (!f)
		return -errno;
	r = otlp_write(p, options, output_file_stream(f));
	if (r) {
		output_file_abort(f);
		return r;
	}
	return output_file_commit(f);
}
