// SPDX-License-Identifier: Apache-2.0
#include "otlp_check.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Prof;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Samp;
typedef Opentelemetry__Proto__Profiles__V1development__Location Loc;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit Attr;
typedef Opentelemetry__Proto__Common__V1__AnyValue Any;

OtlpRequest *otlp_check_decode(const uint8_t *data, size_t len)
{
	return opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, len, data);
}

void otlp_check_free(OtlpRequest *req)
{
	if (req)
		opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
			req, NULL);
}

struct checker {
	unsigned errors;
	char *why;
	size_t whylen;
};

static void __attribute__((format(printf, 2, 3))) bad(struct checker *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->errors++ && c->why) {
		va_start(ap, fmt);
		vsnprintf(c->why, c->whylen, fmt, ap);
		va_end(ap);
	}
}

static void in_range(struct checker *c, int64_t index, size_t n, bool allow_zero, const char *what)
{
	if (index < (allow_zero ? 0 : 1) || (uint64_t)index >= n)
		bad(c, "%s index %" PRId64 " out of range [%d, %zu)", what, index, allow_zero ? 0 : 1, n);
}

struct blob {
	uint8_t *data;
	size_t len;
};

static int compare_blobs(const void *a, const void *b)
{
	const struct blob *x = a, *y = b;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(x->data, y->data, x->len);
}

/* Every message of a table packed, sorted, compared: a duplicate is a violation. */
static void unique_messages(struct checker *c, ProtobufCMessage **msgs, size_t n, const char *what)
{
	struct blob *b = calloc(n ? n : 1, sizeof(*b));

	for (size_t i = 0; i < n; i++) {
		b[i].len = protobuf_c_message_get_packed_size(msgs[i]);
		b[i].data = malloc(b[i].len + 1);
		protobuf_c_message_pack(msgs[i], b[i].data);
	}
	qsort(b, n, sizeof(*b), compare_blobs);
	for (size_t i = 1; i < n; i++)
		if (!compare_blobs(&b[i - 1], &b[i]))
			bad(c, "duplicate entry in the %s table", what);
	for (size_t i = 0; i < n; i++)
		free(b[i].data);
	free(b);
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The build id attributes of the sheet. */
static bool is_build_id_key(const char *key)
{
	return !strcmp(key, "process.executable.build_id.gnu") || !strcmp(key, "process.executable.build_id.go") ||
	       !strcmp(key, "process.executable.build_id.htlhash");
}

static void check_dictionary(struct checker *c, const Dict *d)
{
	char **sorted;

	if (!d) {
		bad(c, "no dictionary");
		return;
	}
	if (!d->n_string_table || strcmp(d->string_table[0], ""))
		bad(c, "string_table[0] is not \"\"");
	sorted = malloc((d->n_string_table + 1) * sizeof(char *));
	memcpy(sorted, d->string_table, d->n_string_table * sizeof(char *));
	qsort(sorted, d->n_string_table, sizeof(char *), compare_strings);
	for (size_t i = 1; i < d->n_string_table; i++)
		if (!strcmp(sorted[i - 1], sorted[i]))
			bad(c, "duplicate string \"%s\"", sorted[i]);
	free(sorted);

	if (!d->n_mapping_table || protobuf_c_message_get_packed_size(&d->mapping_table[0]->base))
		bad(c, "mapping_table[0] is not the zero Mapping");
	if (!d->n_location_table || protobuf_c_message_get_packed_size(&d->location_table[0]->base))
		bad(c, "location_table[0] is not the zero Location");
	if (!d->n_function_table || protobuf_c_message_get_packed_size(&d->function_table[0]->base))
		bad(c, "function_table[0] is not the zero Function");
	if (!d->n_link_table || protobuf_c_message_get_packed_size(&d->link_table[0]->base))
		bad(c, "link_table[0] is not the zero Link");
	if (!d->n_stack_table || protobuf_c_message_get_packed_size(&d->stack_table[0]->base))
		bad(c, "stack_table[0] is not the zero Stack");
	if (!d->n_attribute_table || protobuf_c_message_get_packed_size(&d->attribute_table[0]->base))
		bad(c, "attribute_table[0] is not the zero KeyValueAndUnit");
	for (size_t i = 1; i < d->n_link_table; i++)
		if (d->link_table[i]->trace_id.len != 16 || d->link_table[i]->span_id.len != 8)
			bad(c, "link %zu: trace_id of %zu bytes, span_id of %zu", i, d->link_table[i]->trace_id.len,
			    d->link_table[i]->span_id.len);
	unique_messages(c, (ProtobufCMessage **)d->link_table, d->n_link_table, "link");

	for (size_t i = 1; i < d->n_mapping_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Mapping *m = d->mapping_table[i];
		bool build_id = false;

		in_range(c, m->filename_strindex, d->n_string_table, true, "mapping filename");
		for (size_t j = 0; j < m->n_attribute_indices; j++) {
			in_range(c, m->attribute_indices[j], d->n_attribute_table, false, "mapping attribute");
			if (m->attribute_indices[j] > 0 && (size_t)m->attribute_indices[j] < d->n_attribute_table) {
				const Attr *a = d->attribute_table[m->attribute_indices[j]];

				if (a->key_strindex >= 0 && (size_t)a->key_strindex < d->n_string_table &&
				    is_build_id_key(d->string_table[a->key_strindex]) && a->value &&
				    a->value->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE &&
				    a->value->string_value[0])
					build_id = true;
			}
		}
		/* The sheet: every Mapping carries at least one build id (a frame in a file the host
		 * could not read has no Mapping at all). */
		if (!build_id)
			bad(c, "mapping %zu has no build id attribute", i);
		if (m->memory_limit < m->memory_start)
			bad(c, "mapping %zu ends before it starts", i);
	}
	for (size_t i = 1; i < d->n_location_table; i++) {
		const Loc *l = d->location_table[i];

		in_range(c, l->mapping_index, d->n_mapping_table, true, "location mapping");
		for (size_t j = 0; j < l->n_lines; j++)
			in_range(c, l->lines[j]->function_index, d->n_function_table, false, "line function");
		for (size_t j = 0; j < l->n_attribute_indices; j++)
			in_range(c, l->attribute_indices[j], d->n_attribute_table, false, "location attribute");
	}
	for (size_t i = 1; i < d->n_function_table; i++) {
		in_range(c, d->function_table[i]->name_strindex, d->n_string_table, true, "function name");
		in_range(c, d->function_table[i]->system_name_strindex, d->n_string_table, true, "function system name");
		in_range(c, d->function_table[i]->filename_strindex, d->n_string_table, true, "function filename");
	}
	for (size_t i = 1; i < d->n_stack_table; i++)
		for (size_t j = 0; j < d->stack_table[i]->n_location_indices; j++)
			in_range(c, d->stack_table[i]->location_indices[j], d->n_location_table, false, "stack location");
	for (size_t i = 1; i < d->n_attribute_table; i++) {
		const Attr *a = d->attribute_table[i];

		in_range(c, a->key_strindex, d->n_string_table, false, "attribute key");
		in_range(c, a->unit_strindex, d->n_string_table, true, "attribute unit");
		if (!a->value)
			bad(c, "attribute %zu has no value", i);
		else if (a->value->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX)
			in_range(c, a->value->string_value_strindex, d->n_string_table, true, "attribute value");
	}
	unique_messages(c, (ProtobufCMessage **)d->mapping_table, d->n_mapping_table, "mapping");
	unique_messages(c, (ProtobufCMessage **)d->location_table, d->n_location_table, "location");
	unique_messages(c, (ProtobufCMessage **)d->function_table, d->n_function_table, "function");
	unique_messages(c, (ProtobufCMessage **)d->stack_table, d->n_stack_table, "stack");
	unique_messages(c, (ProtobufCMessage **)d->attribute_table, d->n_attribute_table, "attribute");
	unique_messages(c, (ProtobufCMessage **)d->link_table, d->n_link_table, "link");
}

static int compare_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return x < y ? -1 : x > y;
}

static void check_profile(struct checker *c, const Dict *d, const Prof *p)
{
	int shape = -1; /* 0 timestamps, 1 values, 2 both */
	struct blob *ids = calloc(p->n_samples + 1, sizeof(*ids));
	int32_t type = p->sample_type ? p->sample_type->type_strindex : 0;
	/* The eBPF profilers' convention: an off-CPU sample is a value (time away) per timestamp. */
	bool off_cpu = type > 0 && (size_t)type < d->n_string_table && !strcmp(d->string_table[type], "off_cpu");

	if (!p->sample_type)
		bad(c, "profile without sample_type");
	else {
		in_range(c, p->sample_type->type_strindex, d->n_string_table, false, "sample_type type");
		in_range(c, p->sample_type->unit_strindex, d->n_string_table, false, "sample_type unit");
	}
	if (p->period_type) {
		in_range(c, p->period_type->type_strindex, d->n_string_table, false, "period_type type");
		in_range(c, p->period_type->unit_strindex, d->n_string_table, false, "period_type unit");
	}
	if (p->profile_id.len && p->profile_id.len != 16)
		bad(c, "profile_id of %zu bytes", p->profile_id.len);
	for (size_t i = 0; i < p->n_samples; i++) {
		const Samp *s = p->samples[i];
		int this_shape = s->n_values && s->n_timestamps_unix_nano ? 2 : s->n_values ? 1 : 0;

		in_range(c, s->stack_index, d->n_stack_table, true, "sample stack");
		in_range(c, s->link_index, d->n_link_table, true, "sample link");
		for (size_t j = 0; j < s->n_attribute_indices; j++)
			in_range(c, s->attribute_indices[j], d->n_attribute_table, false, "sample attribute");
		if (!s->n_values && !s->n_timestamps_unix_nano)
			bad(c, "sample %zu has neither values nor timestamps", i);
		if (this_shape == 2 && s->n_values != s->n_timestamps_unix_nano)
			bad(c, "sample %zu has %zu values and %zu timestamps", i, s->n_values, s->n_timestamps_unix_nano);
		if (shape >= 0 && this_shape != shape)
			bad(c, "samples of one profile have different shapes");
		if (off_cpu && this_shape != 2)
			bad(c, "off_cpu sample %zu without a value for each timestamp", i);
		for (size_t j = 0; off_cpu && j < s->n_values; j++)
			if (s->values[j] < 0)
				bad(c, "off_cpu sample %zu has a value of %" PRId64 " ns", i, s->values[j]);
		shape = this_shape;
		for (size_t j = 0; j < s->n_timestamps_unix_nano; j++)
			if (s->timestamps_unix_nano[j] < p->time_unix_nano ||
			    s->timestamps_unix_nano[j] >= p->time_unix_nano + p->duration_nano)
				bad(c, "timestamp %" PRIu64 " outside [%" PRIu64 ", +%" PRIu64 ")", s->timestamps_unix_nano[j],
				    p->time_unix_nano, p->duration_nano);
		/* Identity: stack, set of attributes, link. */
		ids[i].len = (2 + s->n_attribute_indices) * sizeof(int32_t);
		ids[i].data = malloc(ids[i].len);
		((int32_t *)ids[i].data)[0] = s->stack_index;
		((int32_t *)ids[i].data)[1] = s->link_index;
		memcpy(ids[i].data + 2 * sizeof(int32_t), s->attribute_indices, s->n_attribute_indices * sizeof(int32_t));
		qsort(ids[i].data + 2 * sizeof(int32_t), s->n_attribute_indices, sizeof(int32_t), compare_i32);
	}
	qsort(ids, p->n_samples, sizeof(*ids), compare_blobs);
	for (size_t i = 1; i < p->n_samples; i++)
		if (!compare_blobs(&ids[i - 1], &ids[i]))
			bad(c, "two samples with the same stack, attributes and link");
	for (size_t i = 0; i < p->n_samples; i++)
		free(ids[i].data);
	free(ids);
}

unsigned otlp_check_validate(const OtlpRequest *req, char *why, size_t whylen)
{
	struct checker c = { .why = why, .whylen = whylen };

	if (why && whylen)
		*why = 0;
	check_dictionary(&c, req->dictionary);
	if (c.errors)
		return c.errors; /* the rest indexes the dictionary */
	for (size_t i = 0; i < req->n_resource_profiles; i++) {
		const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp = req->resource_profiles[i];

		if (!rp->resource)
			bad(&c, "resource_profiles[%zu] without a resource", i);
		for (size_t j = 0; j < rp->n_scope_profiles; j++)
			for (size_t k = 0; k < rp->scope_profiles[j]->n_profiles; k++)
				check_profile(&c, req->dictionary, rp->scope_profiles[j]->profiles[k]);
	}
	return c.errors;
}

static uint64_t sample_count(const Samp *s)
{
	uint64_t n = 0;

	if (s->n_timestamps_unix_nano)
		return s->n_timestamps_unix_nano;
	for (size_t i = 0; i < s->n_values; i++)
		n += (uint64_t)s->values[i];
	return n;
}

uint64_t otlp_check_samples(const OtlpRequest *req)
{
	uint64_t n = 0;

	for (size_t i = 0; i < req->n_resource_profiles; i++)
		for (size_t j = 0; j < req->resource_profiles[i]->n_scope_profiles; j++)
			for (size_t k = 0; k < req->resource_profiles[i]->scope_profiles[j]->n_profiles; k++) {
				const Prof *p = req->resource_profiles[i]->scope_profiles[j]->profiles[k];

				for (size_t s = 0; s < p->n_samples; s++)
					n += sample_count(p->samples[s]);
			}
	return n;
}

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

static const char *str(const Dict *d, int32_t i)
{
	return i >= 0 && (size_t)i < d->n_string_table ? d->string_table[i] : "?";
}

static void json_any(FILE *out, const Dict *d, const Any *v)
{
	if (!v)
		fputs("null", out);
	else if (v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE)
		fprintf(out, "%" PRId64, v->int_value);
	else if (v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE)
		json_string(out, v->string_value);
	else if (v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX)
		json_string(out, str(d, v->string_value_strindex));
	else
		fputs("null", out);
}

/* Name of the innermost function of a location, or "" when it has no line. */
static const char *location_function(const Dict *d, int32_t loc)
{
	const Loc *l = d->location_table[loc];

	if (!l->n_lines)
		return "";
	return str(d, d->function_table[l->lines[0]->function_index]->name_strindex);
}

static void summary_profile(FILE *out, const Dict *d, const Prof *p)
{
	fprintf(out, "\"period\":%" PRId64 ",\"time_unix_nano\":%" PRIu64 ",\"duration_nano\":%" PRIu64 ",",
		p->period, p->time_unix_nano, p->duration_nano);
	fputs("\"sample_type\":", out);
	json_string(out, p->sample_type ? str(d, p->sample_type->type_strindex) : "");
	fputs(",\"sample_unit\":", out);
	json_string(out, p->sample_type ? str(d, p->sample_type->unit_strindex) : "");
	fputs(",\"period_type\":", out);
	json_string(out, p->period_type ? str(d, p->period_type->type_strindex) : "");
	fputs(",\"period_unit\":", out);
	json_string(out, p->period_type ? str(d, p->period_type->unit_strindex) : "");
	/* One entry per sample: count, how many timestamps and values and the values' sum, stack as
	 * function names leaf first, frame types, attributes. */
	fputs(",\"sample_list\":[", out);
	for (size_t i = 0; i < p->n_samples; i++) {
		const Samp *s = p->samples[i];
		const Opentelemetry__Proto__Profiles__V1development__Stack *st = d->stack_table[s->stack_index];

		int64_t value_sum = 0;

		for (size_t j = 0; j < s->n_values; j++)
			value_sum += s->values[j];
		fprintf(out, "%s{\"count\":%" PRIu64 ",\"timestamps\":%zu,\"values\":%zu,\"value_sum\":%" PRId64
			",\"stack\":[", i ? "," : "", sample_count(s), s->n_timestamps_unix_nano, s->n_values, value_sum);
		for (size_t j = 0; j < st->n_location_indices; j++) {
			fputs(j ? "," : "", out);
			json_string(out, location_function(d, st->location_indices[j]));
		}
		fputs("],\"frame_types\":[", out);
		for (size_t j = 0; j < st->n_location_indices; j++) {
			const Loc *l = d->location_table[st->location_indices[j]];
			const char *type = "";

			for (size_t k = 0; k < l->n_attribute_indices; k++) {
				const Attr *a = d->attribute_table[l->attribute_indices[k]];

				if (!strcmp(str(d, a->key_strindex), "profile.frame.type") && a->value &&
				    a->value->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE)
					type = a->value->string_value;
			}
			fputs(j ? "," : "", out);
			json_string(out, type);
		}
		fputc(']', out);
		if (s->link_index > 0 && (size_t)s->link_index < d->n_link_table) {
			const Opentelemetry__Proto__Profiles__V1development__Link *l = d->link_table[s->link_index];

			fputs(",\"trace_id\":\"", out);
			for (size_t j = 0; j < l->trace_id.len; j++)
				fprintf(out, "%02x", l->trace_id.data[j]);
			fputs("\",\"span_id\":\"", out);
			for (size_t j = 0; j < l->span_id.len; j++)
				fprintf(out, "%02x", l->span_id.data[j]);
			fputc('"', out);
		}
		fputs(",\"attributes\":{", out);
		for (size_t j = 0; j < s->n_attribute_indices; j++) {
			const Attr *a = d->attribute_table[s->attribute_indices[j]];

			fputs(j ? "," : "", out);
			json_string(out, str(d, a->key_strindex));
			fputc(':', out);
			json_any(out, d, a->value);
		}
		fputs("}}", out);
	}
	fputc(']', out);
}

void otlp_check_summary_json(const OtlpRequest *req, FILE *out)
{
	const Dict *d = req->dictionary;
	char why[256];
	unsigned errors = otlp_check_validate(req, why, sizeof(why));
	size_t no_build_id = 0;

	fprintf(out, "{\"valid\":%s,\"errors\":%u,\"why\":", errors ? "false" : "true", errors);
	json_string(out, why);
	fprintf(out, ",\"samples\":%" PRIu64, otlp_check_samples(req));
	if (errors) {
		fputs("}\n", out);
		return;
	}
	for (size_t i = 1; i < d->n_mapping_table; i++) {
		bool found = false;

		for (size_t j = 0; j < d->mapping_table[i]->n_attribute_indices; j++)
			found |= !strncmp(str(d, d->attribute_table[d->mapping_table[i]->attribute_indices[j]]->key_strindex),
					  "process.executable.build_id.", 28);
		no_build_id += !found;
	}
	fprintf(out, ",\"mappings\":%zu,\"mappings_without_build_id\":%zu,\"strings\":%zu,\"resources\":[",
		d->n_mapping_table - 1, no_build_id, d->n_string_table);
	for (size_t i = 0; i < req->n_resource_profiles; i++) {
		const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp = req->resource_profiles[i];

		fputs(i ? ",{\"attributes\":{" : "{\"attributes\":{", out);
		for (size_t j = 0; rp->resource && j < rp->resource->n_attributes; j++) {
			fputs(j ? "," : "", out);
			json_string(out, rp->resource->attributes[j]->key);
			fputc(':', out);
			json_any(out, d, rp->resource->attributes[j]->value);
		}
		fputs("},\"scopes\":[", out);
		for (size_t j = 0; j < rp->n_scope_profiles; j++) {
			const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp = rp->scope_profiles[j];

			fputs(j ? ",{\"name\":" : "{\"name\":", out);
			json_string(out, sp->scope ? sp->scope->name : "");
			fputs(",\"version\":", out);
			json_string(out, sp->scope ? sp->scope->version : "");
			fputs(",\"profiles\":[", out);
			for (size_t k = 0; k < sp->n_profiles; k++) {
				fputs(k ? ",{" : "{", out);
				summary_profile(out, d, sp->profiles[k]);
				fputc('}', out);
			}
			fputs("]}", out);
		}
		fputs("]}", out);
	}
	fputs("]}\n", out);
}
