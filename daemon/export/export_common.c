// SPDX-License-Identifier: Apache-2.0
/* What both transports share: decoding the collector's answers, reading PEM files. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export/export_transport.h"
#include "otlp_profiles_service.pb-c.h"
#include "otlp_rpc_status.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse PbResponse;

/* Printable copy of a server-provided string (it goes to the log). */
static void copy_message(char *out, size_t outlen, const char *in)
{
	size_t i = 0;

	for (; in && in[i] && i + 1 < outlen; i++)
		out[i] = (in[i] >= 0x20 && in[i] < 0x7f) ? in[i] : '?';
	if (outlen)
		out[i] = 0;
}

bool export_parse_rpc_status(const uint8_t *data, size_t len, char *message, size_t msglen, uint64_t *retry_ns,
			     bool *retry_info)
{
	Google__Rpc__Status *st = google__rpc__status__unpack(NULL, len, data);

	*retry_ns = 0;
	if (retry_info)
		*retry_info = false;
	if (!st)
		return false;
	if (message && st->message && *st->message)
		copy_message(message, msglen, st->message);
	for (size_t i = 0; i < st->n_details; i++) {
		static const char suffix[] = "/google.rpc.RetryInfo"; /* type.googleapis.com/google.rpc.RetryInfo */
		const char *type = st->details[i]->type_url;
		size_t tl = type ? strlen(type) : 0;
		Google__Rpc__RetryInfo *ri;

		if (tl < sizeof(suffix) - 1 || strcmp(type + tl - (sizeof(suffix) - 1), suffix))
			continue;
		ri = google__rpc__retry_info__unpack(NULL, st->details[i]->value.len, st->details[i]->value.data);
		/* A RetryInfo is one whatever its delay (zero, or none: retry with our own backoff). */
		if (ri && retry_info)
			*retry_info = true;
		if (ri && ri->retry_delay && ri->retry_delay->seconds >= 0 && ri->retry_delay->nanos >= 0 &&
		    ri->retry_delay->seconds < 86400)
			*retry_ns = (uint64_t)ri->retry_delay->seconds * 1000000000ULL + (uint64_t)ri->retry_delay->nanos;
		if (ri)
			google__rpc__retry_info__free_unpacked(ri, NULL);
	}
	google__rpc__status__free_unpacked(st, NULL);
	return true;
}

bool export_parse_response(const uint8_t *data, size_t len, int64_t *rejected, char *message, size_t msglen)
{
	PbResponse *r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__unpack(
		NULL, len, data);

	*rejected = 0;
	if (!r)
		return false;
	if (r->partial_success) {
		*rejected = r->partial_success->rejected_profiles;
		if (r->partial_success->error_message && *r->partial_success->error_message)
			copy_message(message, msglen, r->partial_success->error_message);
	}
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__free_unpacked(r, NULL);
	return true;
}

char *export_read_file(const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	size_t got = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st))
		goto fail;
	if (!S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
		errno = S_ISREG(st.st_mode) ? EFBIG : EINVAL;
		goto fail;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		goto fail;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			errno = n ? errno : EIO;
			goto fail;
		}
		got += (size_t)n;
	}
	buf[got] = 0;
	close(fd);
	return buf;
fail:
	{
		int saved = errno;

		free(buf);
		close(fd);
		errno = saved;
	}
	return NULL;
}
