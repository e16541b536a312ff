/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the files of the OTLP encoder: otlp_encode.c (a request's tables and their life, the
 * request assembled, split by size, the batch and the file), otlp_dictionary.c (the request's
 * deduplicated dictionary: strings, attributes, links, mappings, functions, locations, stacks) and
 * otlp_profile.c (a process's resource and Profiles: on-CPU, and off-CPU with values). It holds the
 * struct chunk they share and the functions they call across files, named otlp__*(). Nothing else
 * includes it; the API is output/otlp_encode.h.
 *
 * Ownership: a chunk owns every array it allocated (freed by chunk_free() in otlp_encode.c), the
 * timestamp and value arrays of merged samples included; the protobuf-c structs in it point into the
 * profile's strings and timestamps, which it borrows.
 */
#ifndef OTELPROFD_OTLP_ENCODE_INTERNAL_H
#define OTELPROFD_OTLP_ENCODE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/otlp_encode.h"
#include "profile/intern.h"
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
	CSTR_GO, CSTR_BUILD_ID_GO, CSTR_CPYTHON, CSTR_ALLOC_OBJECTS, CSTR_ALLOC_SPACE, CSTR_INUSE_OBJECTS,
	CSTR_INUSE_SPACE, CSTR_BYTES, NCSTR,
};

/* The heap Profiles (--alloc): alloc_objects, alloc_space, inuse_objects, inuse_space. */
#define HEAP_PROFILES 4
/* Profiles per process: on-CPU, off-CPU when the process has waits (--off-cpu), and the heap ones
 * it has samples of (--alloc). */
#define PROFILES_PER_PROCESS (2 + HEAP_PROFILES)

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
	PbValueType heap_types[HEAP_PROFILES]; /* alloc_objects/count, alloc_space/bytes, inuse_... */
};

/* otlp_dictionary.c: request indices of what the profile holds, each added once. Negative: an
 * intern table's error (its bound, or no memory). */
/* Request string index of a profile string (0 stays 0). */
int32_t otlp__map_string(struct chunk *c, uint32_t id);
/* Request string index of one of the encoder's strings; shared with the profile's when equal. */
int32_t otlp__const_string(struct chunk *c, enum cstr which);
/* Attribute table index of (key, value): an int, or a string given by its request string index. */
int64_t otlp__add_attr_key(struct chunk *c, int32_t key, bool is_int, int64_t value);
/* The same with one of the encoder's strings as the key. */
int64_t otlp__add_attr(struct chunk *c, enum cstr key, bool is_int, int64_t value);
/* Request index of a profile link (0: none); links with the same ids share one Link. */
int64_t otlp__map_link(struct chunk *c, uint32_t index);
/* Request index of a profile stack, with its locations, their mappings and functions. */
int64_t otlp__map_stack(struct chunk *c, uint32_t index);

/* otlp_profile.c: the ResourceProfiles of process (its resource, one scope, its Profiles) added to
 * the request being built. 0 or -ENOMEM (or an intern table's error). */
int otlp__add_process(struct chunk *c, uint32_t process, const struct by_process *bp);

#endif
