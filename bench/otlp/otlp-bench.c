// SPDX-License-Identifier: Apache-2.0
/*
 * otlp-bench: the cost of OTLP encoding on a real profile. Samples this host with the real BPF
 * sampler for SECONDS at HZ, builds the profile (symbolized), then encodes it ROUNDS times and
 * reports CPU time per sample and bytes on the wire per sample, raw and gzipped (what the gRPC and
 * HTTP transports send with --compression gzip). Each process is described as the daemon does
 * (process table and metadata: executable, build ids, cgroup/container, service.name, host), so
 * the resource attributes, and the bytes per sample, are those otelprofd sends.
 * Usage (root): otlp-bench [SECONDS=10] [HZ=99] [ROUNDS=50]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "profile/aggregate.h"
#include "log.h"
#include "process/metadata.h"
#include "output/otlp_encode.h"
#include "process/process_table.h"
#include "profile/profile.h"
#include "sampling/sampler.h"
#include "symbolizer.h"

struct ctx {
	struct aggregate *agg;
	struct symbolizer *sym;
	struct process_table *processes;
	struct metadata *metadata;
	uint64_t to_unix;
};

/* The daemon's describe path (main.c's describe_process, without Kubernetes names). */
static void describe(void *arg, struct profile *p, uint32_t process)
{
	struct ctx *c = arg;
	const struct pf_process *proc = &p->processes[process];

	metadata_describe(c->metadata, process_table_find_instance(c->processes, proc->pid, proc->start_ns, proc->instance),
			  NULL, p, process);
}

static uint64_t ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void on_record(void *arg, const void *data, size_t size)
{
	struct ctx *c = arg;
	const struct otelprof_sample *s = data;
	const struct process_info *pi;

	if (size < sizeof(*s) || s->hdr.kind != OTELPROF_RECORD_SAMPLE)
		return;
	pi = s->pid ? process_table_sample(c->processes, s->pid, s->process_start_ns, s->process_comm, s->cgroup_id,
								     s->exec_id)
		    : NULL;
	if (pi)
		symbolizer_prepare_instance(c->sym, (pid_t)s->pid, pi->instance, s->process_start_ns);
	aggregate_add_instance(c->agg, s, pi ? pi->instance : PROCESS_INSTANCE_UNKNOWN, s->time_ns + c->to_unix);
}

static size_t gzip_size(const uint8_t *data, size_t len)
{
	uLongf out_len = compressBound(len) + 64;
	uint8_t *out = malloc(out_len);
	z_stream zs = { 0 };
	size_t n = 0;

	if (out && deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK) {
		zs.next_in = (Bytef *)data;
		zs.avail_in = (uInt)len;
		zs.next_out = out;
		zs.avail_out = (uInt)out_len;
		if (deflate(&zs, Z_FINISH) == Z_STREAM_END)
			n = zs.total_out;
		deflateEnd(&zs);
	}
	free(out);
	return n;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	unsigned hz = argc > 2 ? (unsigned)atoi(argv[2]) : 99, rounds = argc > 3 ? (unsigned)atoi(argv[3]) : 50;
	struct agg_limits limits = { 65536, 32u << 20, 1000000 };
	struct ctx c = { .agg = aggregate_new(&limits), .sym = symbolizer_new(NULL),
			 .processes = process_table_new(&(struct process_table_config){ 0 }),
			 .metadata = metadata_new(&(struct metadata_config){ 0 }) };
	struct otlp_encode_options eo = { .max_message_size = OTLP_DEFAULT_MAX_MESSAGE_SIZE };
	struct sampler *s;
	struct profile *p;
	struct otlp_batch batch;
	uint64_t start_unix = ns(CLOCK_REALTIME), start = ns(CLOCK_MONOTONIC), t0, t1, wall0, wall1;
	size_t raw = 0, gz = 0;
	int err;

	log_set_level(LOG_LEVEL_ERROR);
	if (!c.agg || !c.sym || !c.processes || !c.metadata)
		return 1;
	c.to_unix = start_unix - start;
	s = sampler_open(&(struct sampler_config){ .frequency = hz, .ringbuf_kib = 4096 }, on_record, &c, &err);
	if (!s)
		return 2;
	while (ns(CLOCK_MONOTONIC) - start < (uint64_t)(seconds * 1e9)) {
		usleep(50000);
		sampler_consume(s);
	}
	sampler_consume(s);
	p = profile_build(c.agg, c.sym, &(struct profile_build_options){
		.frequency = hz, .time_unix_ns = start_unix, .duration_ns = ns(CLOCK_MONOTONIC) - start,
		.describe_process = describe, .describe_ctx = &c });
	sampler_close(s);
	if (!p || !p->total_count)
		return 1;

	t0 = ns(CLOCK_PROCESS_CPUTIME_ID);
	wall0 = ns(CLOCK_MONOTONIC);
	for (unsigned i = 0; i < rounds; i++) {
		if (otlp_encode(p, &eo, &batch))
			return 1;
		if (i + 1 < rounds)
			otlp_batch_free(&batch);
	}
	t1 = ns(CLOCK_PROCESS_CPUTIME_ID);
	wall1 = ns(CLOCK_MONOTONIC);
	for (size_t i = 0; i < batch.nmessages; i++) {
		raw += batch.messages[i].len;
		gz += gzip_size(batch.messages[i].data, batch.messages[i].len);
	}
	printf("profile: %" PRIu64 " samples, %zu distinct (process, thread, cpu, stack), %zu processes, "
	       "%zu stacks, %zu locations, %zu functions, %zu mappings\n",
	       p->total_count, p->nsamples, p->nprocesses - 1, p->nstacks - 1, p->nlocations - 1, p->nfunctions - 1,
	       p->nmappings - 1);
	printf("resources: %.1f attributes per process on average\n",
	       p->nprocesses > 1 ? (double)p->nprocess_attributes / (double)(p->nprocesses - 1) : 0.0);
	printf("encode: %.0f ns CPU per sample (%.2f ms per profile, %.2f ms wall), %u rounds\n",
	       (double)(t1 - t0) / rounds / (double)p->total_count, (double)(t1 - t0) / rounds / 1e6,
	       (double)(wall1 - wall0) / rounds / 1e6, rounds);
	printf("wire: %zu requests, %zu bytes raw = %.1f bytes/sample; gzip %zu bytes = %.1f bytes/sample (%.1fx)\n",
	       batch.nmessages, raw, (double)raw / (double)p->total_count, gz, (double)gz / (double)p->total_count,
	       gz ? (double)raw / (double)gz : 0);
	otlp_batch_free(&batch);
	profile_free(p);
	symbolizer_free(c.sym);
	process_table_free(c.processes);
	metadata_free(c.metadata);
	aggregate_free(c.agg);
	return 0;
}
