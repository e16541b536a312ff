// SPDX-License-Identifier: Apache-2.0
/*
 * OTLP over gRPC with the gRPC core C API: one channel, one unary call per request to
 * ProfilesService/Export, headers as metadata, gzip through the channel's default compression,
 * a deadline per call. The channel reconnects on its own; calls are wait_for_ready, so a call made
 * while the collector is away waits (within its deadline) for the connection instead of failing at
 * once, and is sent the moment the collector is back; if the deadline passes first, the exporter
 * retries it. gRPC is loaded, initialised and the channel made at the first request, on the sender's
 * thread: a service with nothing to send yet holds none of gRPC's memory (docs/memory.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/compression.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "dl_lib.h"
#include "export/export_failure.h"
#include "export/export_transport.h"
#include "export/grpc_lib.h"

#define EXPORT_METHOD "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
/* Bound on a collector's answer and on PEM files. */
#define MAX_PEM_BYTES (1u << 20)

struct grpc_transport {
	struct export_transport base;
	const struct export_config *cfg; /* the exporter's, which outlives the transport */
	bool opened;                     /* grpc_init() called: the objects below are gRPC's */
	grpc_channel *channel;
	grpc_completion_queue *cq;
	grpc_metadata *metadata;
	size_t nmetadata;
};

/* "Failed to read the <what> <path>: <error>" */
static void set_error(char *buf, size_t len, const char *what, const char *path, int err)
{
	if (buf && len)
		snprintf(buf, len, "Failed to read the %s %s: %s", what, path, strerror(err));
}

/* The TLS files' contents (ca, cert, key: NULL when not configured). 0, or *err = -errno with errbuf set
 * and nothing to free. */
static int read_pems(const struct export_config *cfg, char **ca, char **cert, char **key, int *err,
				 char *errbuf, size_t errlen)
{
	*ca = *cert = *key = NULL;
	if (cfg->ca_file && !(*ca = export_read_file(cfg->ca_file, MAX_PEM_BYTES))) {
		*err = errno ? -errno : -EIO;
		set_error(errbuf, errlen, "CA file", cfg->ca_file, errno);
		return *err;
	}
	if (!cfg->client_cert)
		return 0;
	*cert = export_read_file(cfg->client_cert, MAX_PEM_BYTES);
	if (!*cert)
		set_error(errbuf, errlen, "client certificate", cfg->client_cert, errno);
	*key = *cert ? export_read_file(cfg->client_key, MAX_PEM_BYTES) : NULL;
	if (*cert && !*key)
		set_error(errbuf, errlen, "client key", cfg->client_key, errno);
	if (*cert && *key)
		return 0;
	*err = errno ? -errno : -EIO;
	free(*ca);
	free(*cert);
	*ca = *cert = NULL;
	return *err;
}

/* Free what read_pems() read, the private key wiped first. */
static void free_pems(char *ca, char *cert, char *key)
{
	free(ca);
	free(cert);
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
}

/* Retryable status codes of the OTLP sheet; RESOURCE_EXHAUSTED only with RetryInfo. */
enum export_outcome export_grpc_classify(int code, bool has_retry_info)
{
	switch ((grpc_status_code)code) {
	case GRPC_STATUS_OK:
		return EXPORT_OK;
	case GRPC_STATUS_UNAVAILABLE:
	case GRPC_STATUS_ABORTED:
	case GRPC_STATUS_OUT_OF_RANGE:
	case GRPC_STATUS_DATA_LOSS:
	case GRPC_STATUS_CANCELLED:
	case GRPC_STATUS_DEADLINE_EXCEEDED:
		return EXPORT_RETRYABLE;
	case GRPC_STATUS_RESOURCE_EXHAUSTED:
		return has_retry_info ? EXPORT_RETRYABLE : EXPORT_PERMANENT;
	default:
		return EXPORT_PERMANENT;
	}
}

static bool slice_equals(grpc_slice s, const char *text)
{
	size_t n = strlen(text);

	return GRPC_SLICE_LENGTH(s) == n && !memcmp(GRPC_SLICE_START_PTR(s), text, n);
}

/* The whole message of a received byte buffer, decompressed, as one slice. */
static grpc_slice read_buffer(grpc_byte_buffer *bb)
{
	grpc_byte_buffer_reader reader;
	grpc_slice s;

	if (!grpc_lib.grpc_byte_buffer_reader_init(&reader, bb))
		return grpc_lib.grpc_empty_slice();
	s = grpc_lib.grpc_byte_buffer_reader_readall(&reader);
	grpc_lib.grpc_byte_buffer_reader_destroy(&reader);
	return s;
}

/* One call, failing fast when the channel cannot connect; fills res. */
static void send_once(struct grpc_transport *t, const uint8_t *data, size_t len, gpr_timespec deadline,
		      uint64_t timeout_ns, struct export_result *res)
{
	grpc_slice method = grpc_lib.grpc_slice_from_static_string(EXPORT_METHOD);
	grpc_slice payload = grpc_lib.grpc_slice_from_copied_buffer((const char *)data, len);
	grpc_byte_buffer *request = grpc_lib.grpc_raw_byte_buffer_create(&payload, 1), *response = NULL;
	grpc_metadata_array initial_md, trailing_md;
	grpc_status_code status = GRPC_STATUS_UNKNOWN;
	grpc_slice details = grpc_lib.grpc_empty_slice();
	const char *error_string = NULL;
	grpc_op ops[6];
	grpc_call *call;
	grpc_event ev;
	uint64_t retry_ns = 0;
	bool has_retry_info = false;

	grpc_lib.grpc_slice_unref(payload);
	memset(res, 0, sizeof(*res));
	memset(ops, 0, sizeof(ops));
	grpc_lib.grpc_metadata_array_init(&initial_md);
	grpc_lib.grpc_metadata_array_init(&trailing_md);
	call = grpc_lib.grpc_channel_create_call(t->channel, NULL, GRPC_PROPAGATE_DEFAULTS, t->cq, method, NULL, deadline, NULL);
	if (!call) {
		grpc_lib.grpc_byte_buffer_destroy(request);
		res->outcome = EXPORT_RETRYABLE;
		snprintf(res->message, sizeof(res->message), "could not create a gRPC call");
		return;
	}
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	/* Fail fast, not GRPC_INITIAL_METADATA_WAIT_FOR_READY: a call that cannot connect then ends
	 * with the reason (refused, TLS, DNS) instead of a bare deadline; grpc_send() waits. */
	ops[0].flags = 0;
	ops[0].data.send_initial_metadata.count = t->nmetadata;
	ops[0].data.send_initial_metadata.metadata = t->metadata;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = request;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial_md;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &response;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &trailing_md;
	ops[5].data.recv_status_on_client.status = &status;
	ops[5].data.recv_status_on_client.status_details = &details;
	ops[5].data.recv_status_on_client.error_string = &error_string;
	if (grpc_lib.grpc_call_start_batch(call, ops, 6, call, NULL) != GRPC_CALL_OK) {
		res->outcome = EXPORT_RETRYABLE;
		snprintf(res->message, sizeof(res->message), "could not start a gRPC call");
		goto out;
	}
	/* The call's deadline bounds the wait; the extra second only guards against a stuck core. */
	ev = grpc_lib.grpc_completion_queue_pluck(t->cq, call,
					 grpc_lib.gpr_time_add(deadline, grpc_lib.gpr_time_from_seconds(1, GPR_TIMESPAN)), NULL);
	if (ev.type != GRPC_OP_COMPLETE) {
		grpc_lib.grpc_call_cancel(call, NULL);
		grpc_lib.grpc_completion_queue_pluck(t->cq, call, grpc_lib.gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
		status = GRPC_STATUS_DEADLINE_EXCEEDED;
	}

	for (size_t i = 0; i < trailing_md.count; i++) {
		if (!slice_equals(trailing_md.metadata[i].key, "grpc-status-details-bin"))
			continue;
		export_parse_rpc_status(GRPC_SLICE_START_PTR(trailing_md.metadata[i].value),
					GRPC_SLICE_LENGTH(trailing_md.metadata[i].value), NULL, 0, &retry_ns, &has_retry_info);
	}
	res->code = (int)status;
	res->retry_after_ns = retry_ns;
	res->outcome = export_grpc_classify((int)status, has_retry_info);
	if (status == GRPC_STATUS_OK && response) {
		grpc_slice body = read_buffer(response);

		if (!export_parse_response(GRPC_SLICE_START_PTR(body), GRPC_SLICE_LENGTH(body), &res->rejected,
					   res->message, sizeof(res->message))) {
			/* The data was accepted; only the answer is garbage. Say so, do not resend. */
			snprintf(res->message, sizeof(res->message), "undecodable ExportProfilesServiceResponse");
		}
		grpc_lib.grpc_slice_unref(body);
	} else if (status != GRPC_STATUS_OK) {
		bool use_error_string = !GRPC_SLICE_LENGTH(details) && error_string;

		export_describe_grpc_failure((int)status,
					     use_error_string ? error_string : (const char *)GRPC_SLICE_START_PTR(details),
					     use_error_string ? strlen(error_string) : GRPC_SLICE_LENGTH(details), timeout_ns,
					     res->message, sizeof(res->message));
	}
out:
	grpc_lib.gpr_free((void *)error_string);
	grpc_lib.grpc_slice_unref(details);
	grpc_lib.grpc_metadata_array_destroy(&initial_md);
	grpc_lib.grpc_metadata_array_destroy(&trailing_md);
	grpc_lib.grpc_byte_buffer_destroy(request);
	if (response)
		grpc_lib.grpc_byte_buffer_destroy(response);
	grpc_lib.grpc_call_unref(call);
}

/* gRPC's objects of an open transport, and gRPC's own reference (grpc_init) let go. */
static void grpc_transport_close(struct grpc_transport *t)
{
	if (!t->opened)
		return;
	if (t->channel)
		grpc_lib.grpc_channel_destroy(t->channel);
	if (t->cq) {
		grpc_lib.grpc_completion_queue_shutdown(t->cq);
		while (grpc_lib.grpc_completion_queue_pluck(t->cq, NULL, grpc_lib.gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
		       GRPC_QUEUE_SHUTDOWN)
			;
		grpc_lib.grpc_completion_queue_destroy(t->cq);
	}
	for (size_t i = 0; i < t->nmetadata; i++) {
		grpc_lib.grpc_slice_unref(t->metadata[i].key);
		grpc_lib.grpc_slice_unref(t->metadata[i].value);
	}
	free(t->metadata);
	t->channel = NULL;
	t->cq = NULL;
	t->metadata = NULL;
	t->nmetadata = 0;
	t->opened = false;
	grpc_lib.grpc_shutdown();
}

static void grpc_transport_free(struct export_transport *base)
{
	struct grpc_transport *t = (struct grpc_transport *)base;

	if (!t)
		return;
	grpc_transport_close(t);
	free(t);
}

/* Read the TLS files and make the channel's credentials. NULL with *err and errbuf set. */
static grpc_channel_credentials *make_credentials(const struct export_config *cfg, int *err, char *errbuf,
						  size_t errlen)
{
	grpc_ssl_pem_key_cert_pair pair = { 0 };
	grpc_channel_credentials *creds;
	char *ca = NULL, *cert = NULL, *key = NULL;

	if (!cfg->tls)
		return grpc_lib.grpc_insecure_credentials_create();
	if (read_pems(cfg, &ca, &cert, &key, err, errbuf, errlen))
		return NULL;
	if (cert) {
		pair.private_key = key;
		pair.cert_chain = cert;
	}
	creds = grpc_lib.grpc_ssl_credentials_create(ca, cert ? &pair : NULL, NULL, NULL);
	free_pems(ca, cert, key);
	if (!creds) {
		*err = -EINVAL;
		snprintf(errbuf, errlen, "Failed to set up TLS for the collector");
	}
	return creds;
}

/*
 * gRPC loaded and initialised, the channel to the collector made: at the first request, so that a
 * run with nothing to send never maps gRPC (docs/memory.md). 0, or -errno with errbuf set; on
 * failure nothing is left open and the next request tries again.
 */
static int grpc_transport_open(struct grpc_transport *t, char *errbuf, size_t errlen)
{
	const struct export_config *cfg = t->cfg;
	grpc_channel_credentials *creds;
	char user_agent[64];
	grpc_arg args[7];
	grpc_channel_args channel_args = { .num_args = 0, .args = args };
	char why[sizeof(((struct export_result *)0)->message) - 32]; /* errbuf is a result's message */
	int err = 0;

	if (grpc_lib_load(why, sizeof(why))) {
		snprintf(errbuf, errlen, "OTLP over gRPC needs %s", why);
		return -ELIBACC;
	}
	grpc_lib.grpc_init();
	t->opened = true;
	t->metadata = calloc(cfg->nheaders ? cfg->nheaders : 1, sizeof(*t->metadata));
	t->cq = grpc_lib.grpc_completion_queue_create_for_pluck(NULL);
	if (!t->metadata || !t->cq) {
		snprintf(errbuf, errlen, "Out of memory");
		grpc_transport_close(t);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cfg->nheaders; i++) {
		t->metadata[i].key = grpc_lib.grpc_slice_from_copied_string(cfg->headers[i].key);
		t->metadata[i].value = grpc_lib.grpc_slice_from_copied_string(cfg->headers[i].value);
		t->nmetadata++;
	}
	creds = make_credentials(cfg, &err, errbuf, errlen);
	if (!creds) {
		grpc_transport_close(t);
		return err;
	}

	snprintf(user_agent, sizeof(user_agent), "otelprofd/%s", OTELPROFD_VERSION);
	args[channel_args.num_args++] = (grpc_arg){ .type = GRPC_ARG_STRING, .key = (char *)GRPC_ARG_PRIMARY_USER_AGENT_STRING,
						   .value.string = user_agent };
	args[channel_args.num_args++] = (grpc_arg){ .type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH,
						   .value.integer = cfg->max_message_size > (1u << 30) ? 1 << 30
								    : (int)cfg->max_message_size + 4096 };
	/* Come back quickly after a collector restart: the exporter does its own backoff. */
	args[channel_args.num_args++] = (grpc_arg){ .type = GRPC_ARG_INTEGER,
						   .key = (char *)GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, .value.integer = 500 };
	args[channel_args.num_args++] = (grpc_arg){ .type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
						   .value.integer = 500 };
	args[channel_args.num_args++] = (grpc_arg){ .type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
						   .value.integer = 3000 };
	/* Retries are the exporter's (with the sheet's rules), not the channel's. */
	args[channel_args.num_args++] = (grpc_arg){ .type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_ENABLE_RETRIES,
						   .value.integer = 0 };
	if (cfg->compression == EXPORT_COMPRESSION_GZIP)
		args[channel_args.num_args++] = (grpc_arg){ .type = GRPC_ARG_INTEGER,
							   .key = (char *)GRPC_COMPRESSION_CHANNEL_DEFAULT_ALGORITHM,
							   .value.integer = GRPC_COMPRESS_GZIP };
	t->channel = grpc_lib.grpc_channel_create(cfg->target, creds, &channel_args);
	grpc_lib.grpc_channel_credentials_release(creds);
	if (!t->channel) {
		snprintf(errbuf, errlen, "Failed to create a gRPC channel to %s", cfg->target);
		grpc_transport_close(t);
		return -EINVAL;
	}
	return 0;
}

/*
 * Waits for the channel as GRPC_INITIAL_METADATA_WAIT_FOR_READY would, keeping the reason: while
 * the call fails because the channel cannot connect (UNAVAILABLE in TRANSIENT_FAILURE), wait for
 * the channel's next state until the deadline and call again. The last call's outcome and words
 * are the result ("connection refused", not "Deadline Exceeded").
 */
static int grpc_send(struct export_transport *base, const uint8_t *data, size_t len, uint64_t timeout_ns,
		     struct export_result *res)
{
	struct grpc_transport *t = (struct grpc_transport *)base;
	struct export_result connect_failure;
	bool failed_to_connect = false;
	gpr_timespec deadline;
	int r;

	if (!t->opened && (r = grpc_transport_open(t, res->message, sizeof(res->message)))) {
		/* No gRPC: no request will ever go (the library is loaded once); the rest may pass. */
		res->code = 0;
		res->retry_after_ns = 0;
		res->rejected = 0;
		res->outcome = r == -ELIBACC ? EXPORT_PERMANENT : EXPORT_RETRYABLE;
		return 0;
	}
	deadline = grpc_lib.gpr_time_add(grpc_lib.gpr_now(GPR_CLOCK_MONOTONIC),
					 grpc_lib.gpr_time_from_nanos((int64_t)timeout_ns, GPR_TIMESPAN));
	send_once(t, data, len, deadline, timeout_ns, res);
	while (res->code == GRPC_STATUS_UNAVAILABLE &&
	       grpc_lib.grpc_channel_check_connectivity_state(t->channel, 0) == GRPC_CHANNEL_TRANSIENT_FAILURE) {
		connect_failure = *res;
		failed_to_connect = true;
		grpc_lib.grpc_channel_watch_connectivity_state(t->channel, GRPC_CHANNEL_TRANSIENT_FAILURE, deadline, t->cq, t);
		grpc_lib.grpc_completion_queue_pluck(t->cq, t, grpc_lib.gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
		if (grpc_lib.gpr_time_cmp(grpc_lib.gpr_now(GPR_CLOCK_MONOTONIC), deadline) >= 0)
			break;
		send_once(t, data, len, deadline, timeout_ns, res);
	}
	/* A call the deadline cut while connecting says less than the connection failure before it. */
	if (failed_to_connect && res->outcome != EXPORT_OK && !strncmp(res->message, "timed out", 9))
		*res = connect_failure;
	return 0;
}

struct export_transport *export_grpc_new(const struct export_config *cfg, int *err, char *errbuf, size_t errlen)
{
	struct grpc_transport *t;
	char why[DL_LIB_ERROR_MAX];

	/* What can be checked without gRPC is checked now: the TLS files can be read. */
	if (cfg->tls) {
		char *ca = NULL, *cert = NULL, *key = NULL;

		if (read_pems(cfg, &ca, &cert, &key, err, errbuf, errlen))
			return NULL;
		free_pems(ca, cert, key);
	}
	/* gRPC itself waits for the first request when its file is where the loader will find it;
	 * otherwise it is loaded now, to stop the run at once if it cannot be. */
	if (!grpc_lib_present() && grpc_lib_load(why, sizeof(why))) {
		*err = -ELIBACC;
		snprintf(errbuf, errlen, "OTLP over gRPC needs %s", why);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		*err = -ENOMEM;
		snprintf(errbuf, errlen, "Out of memory");
		return NULL;
	}
	t->base.send = grpc_send;
	t->base.free = grpc_transport_free;
	t->base.name = "grpc";
	t->cfg = cfg;
	return &t->base;
}
