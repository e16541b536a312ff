// SPDX-License-Identifier: Apache-2.0
/* otlp-dump FILE...: one JSON line per ExportProfilesServiceRequest file (otlp_check.h's summary). */
#include <stdio.h>
#include <stdlib.h>

#include "export/export_transport.h"
#include "otlp_check.h"

int main(int argc, char **argv)
{
	int status = 0;

	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		uint8_t *data = malloc(256u << 20);
		size_t len = f && data ? fread(data, 1, 256u << 20, f) : 0;
		OtlpRequest *req = f ? otlp_check_decode(data, len) : NULL;

		if (f)
			fclose(f);
		if (!req) {
			printf("{\"valid\":false,\"errors\":1,\"why\":\"cannot read or decode %s\"}\n", argv[i]);
			status = 1;
		} else {
			otlp_check_summary_json(req, stdout);
		}
		otlp_check_free(req);
		free(data);
	}
	return status;
}
