/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test helpers: decode an ExportProfilesServiceRequest with the project's generated code, check
 * the rules of ../shared/otlp-profiles.md (every index in range, zero element first in every
 * table, no duplicate entries, one sample shape, timestamps inside the profile's interval, an
 * off_cpu Profile's samples a value per timestamp, none negative), and
 * summarize it (samples per leaf function, attributes) for assertions.
 */
#ifndef OTELPROFD_TESTS_OTLP_CHECK_H
#define OTELPROFD_TESTS_OTLP_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "otlp_profiles_service.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest OtlpRequest;

/* Decode; NULL when the bytes are not a request. Free with otlp_check_free(). */
OtlpRequest *otlp_check_decode(const uint8_t *data, size_t len);
void otlp_check_free(OtlpRequest *req);

/* Number of rule violations; the first is described in why (may be NULL). */
unsigned otlp_check_validate(const OtlpRequest *req, char *why, size_t whylen);

/* Samples (timestamps, or values when there are none) in the request. */
uint64_t otlp_check_samples(const OtlpRequest *req);

/* A JSON object summarizing the request, on one line: samples, leaf and per-function counts,
 * resources with attributes, sample attributes, scope, types, validation result. */
void otlp_check_summary_json(const OtlpRequest *req, FILE *out);

#endif
