// SPDX-License-Identifier: Apache-2.0
/*
 * The OTLP encoder's Profiles (see otlp_encode_internal.h): per process a ResourceProfiles with its
 * resource attributes, one ScopeProfiles "otelprofd", the on-CPU Profile (samples/count, timestamps
 * only), with --off-cpu a second Profile of its waits (off_cpu/nanoseconds, a value and a
 * timestamp per wait), and with --alloc pprof's four heap types as four Profiles (alloc_objects/count,
 * alloc_space/bytes, inuse_objects/count, inuse_space/bytes: one value per sample, its sum). Samples
 * are keyed by stack, attributes and link, merged when they meet.
 */
#include "output/otlp_encode_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

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
static int add_sample(struct chunk *c, struct intern *ids, const struct pf_sample *s, enum pf_view view)
{
	bool heap = view >= PF_VIEW_ALLOC_OBJECTS;
	struct sample_key k;
	PbSample *out;
	int64_t id;
	int added;

	memset(&k, 0, sizeof(k));
	if ((id = otlp__map_stack(c, s->stack)) < 0)
		return (int)id;
	k.stack = (int32_t)id;
	if ((id = otlp__add_attr(c, CSTR_THREAD_ID, true, s->tid)) < 0)
		return (int)id;
	k.attrs[0] = (int32_t)id;
	if ((id = otlp__add_attr(c, CSTR_THREAD_NAME, false, otlp__map_string(c, s->thread_name))) < 0)
		return (int)id;
	k.attrs[1] = (int32_t)id;
	if ((id = otlp__add_attr(c, CSTR_CPU_NUMBER, true, s->cpu)) < 0)
		return (int)id;
	k.attrs[2] = (int32_t)id;
	if ((id = otlp__map_link(c, s->link)) < 0)
		return (int)id;
	k.link = (int32_t)id;
	k.profile_link = s->link;
	if ((id = intern_put(ids, &k, sizeof(k), &added)) < 0)
		return (int)id;
	/* Samples sent: a heap sample counts once (in its bytes' Profile), not in each of its two. */
	if (view != PF_VIEW_ALLOC_OBJECTS && view != PF_VIEW_INUSE_OBJECTS)
		c->timestamps += s->count;
	if (!added && heap) {
		out = c->sample_ptrs[c->nsamples - intern_count(ids) + (size_t)id];
		out->values[0] += (int64_t)profile_sample_value(s, view);
		return 0;
	}
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

		if ((id = otlp__add_attr_key(c, otlp__map_string(c, a->key), false, otlp__map_string(c, a->string_value))) < 0)
			return (int)id;
		c->sample_attrs[c->nsample_attrs++] = (int32_t)id;
		out->n_attribute_indices++;
	}
	if (heap) {
		/* Heap: values only, one per sample, the objects or bytes it stands for. */
		int64_t *value = malloc(sizeof(*value));

		if (!value || keep_merged(c, value))
			return -ENOMEM;
		*value = (int64_t)profile_sample_value(s, view);
		out->values = value;
		out->n_values = 1;
		c->sample_ptrs[c->nsamples++] = out;
		return 0;
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

/* The samples of process in prof: those of one view (on-CPU, off-CPU, a heap type); its time covers them. */
static int fill_profile(struct chunk *c, PbProfile *prof, uint32_t process, const struct by_process *bp,
			enum pf_view view)
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

		if (!profile_sample_in_view(s, view))
			continue;
		if ((r = add_sample(c, ids, s, view)))
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
 * One of the process's other Profiles (slot in its PROFILES_PER_PROCESS), of one view: its off-CPU
 * samples (off_cpu/nanoseconds, a value, ns away scaled by the sampling, and a timestamp, when the
 * thread ran again, per wait), or a heap type's. None when the process has no sample of the view.
 */
static int add_view_profile(struct chunk *c, uint32_t process, const struct by_process *bp, PbScopeProfiles *sp,
			    size_t slot, enum pf_view view, PbValueType *type)
{
	size_t k = PROFILES_PER_PROCESS * (size_t)c->nrps + slot;
	PbProfile *prof = &c->profiles[k];
	int r;

	opentelemetry__proto__profiles__v1development__profile__init(prof);
	prof->sample_type = type;
	set_profile_id(c, k, process);
	if ((r = fill_profile(c, prof, process, bp, view)))
		return r;
	if (prof->n_samples)
		sp->profiles[sp->n_profiles++] = prof;
	return 0;
}

int otlp__add_process(struct chunk *c, uint32_t process, const struct by_process *bp)
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
	if ((r = fill_profile(c, prof, process, bp, PF_VIEW_CPU)))
		return r;
	/* A process that only waited or allocated has no on-CPU Profile. */
	if (prof->n_samples || (!p->off_cpu_count && !p->alloc_enabled))
		sp->profiles[sp->n_profiles++] = prof;
	if (p->off_cpu_count && (r = add_view_profile(c, process, bp, sp, 1, PF_VIEW_OFF_CPU, &c->off_cpu_type)))
		return r;
	for (int k = 0; p->alloc_enabled && k < HEAP_PROFILES; k++)
		if ((r = add_view_profile(c, process, bp, sp, 2 + k, (enum pf_view)(PF_VIEW_ALLOC_OBJECTS + k),
					  &c->heap_types[k])))
			return r;
	c->rp_ptrs[c->nrps++] = rp;
	return 0;
}
