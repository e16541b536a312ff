// SPDX-License-Identifier: Apache-2.0
/*
 * The test collector as a program, for the end-to-end tests: serves gRPC and HTTP on 127.0.0.1
 * until SIGTERM/SIGINT, saves every valid request in --out, and prints its counters as one JSON
 * line on exit. Usage:
 *   test-collector [--grpc-port N] [--http-port N] [--no-grpc] [--no-http] [--cert PEM --key PEM]
 *                  [--require-header K=V] [--out DIR] [--ports-file FILE]
 *                  [--behaviour ok|unavailable|exhausted|permanent|partial|garbage|slow [--count N] [--retry-ms N]]
 *                  [--raw-garbage] [--client-ca PEM] [--expect-gzip]
 * --retry-ms is the server's retry delay (unavailable) or how long an answer waits (slow).
 * --raw-garbage: no gRPC or HTTP server, raw TCP listeners on both ports answering random bytes.
 * --client-ca: gRPC TLS requires a client certificate signed by this CA.
 * --expect-gzip: count gRPC requests that were not gzip-compressed (not_gzip).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int behaviour(const char *name)
{
	static const char *const names[] = { "ok", "unavailable", "exhausted", "permanent", "partial", "garbage", "slow" };

	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcmp(name, names[i]))
			return i;
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "grpc-port", required_argument, NULL, 'g' }, { "http-port", required_argument, NULL, 'H' },
		{ "no-grpc", no_argument, NULL, 'G' }, { "no-http", no_argument, NULL, 'N' },
		{ "cert", required_argument, NULL, 'c' }, { "key", required_argument, NULL, 'k' },
		{ "require-header", required_argument, NULL, 'r' }, { "out", required_argument, NULL, 'o' },
		{ "ports-file", required_argument, NULL, 'p' }, { "behaviour", required_argument, NULL, 'b' },
		{ "count", required_argument, NULL, 'n' }, { "retry-ms", required_argument, NULL, 'm' },
		{ "raw-garbage", no_argument, NULL, 'R' }, { "client-ca", required_argument, NULL, 'C' },
		{ "expect-gzip", no_argument, NULL, 'z' },
		{ 0 },
	};
	struct collector_config cfg = { 0 };
	struct collector_stats st;
	struct collector *c;
	const char *ports_file = NULL;
	int b = 0, opt;
	unsigned count = 0, retry_ms = 1000;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'g': cfg.grpc_port = atoi(optarg); break;
		case 'H': cfg.http_port = atoi(optarg); break;
		case 'G': cfg.grpc_port = -1; break;
		case 'N': cfg.http_port = -1; break;
		case 'c': cfg.cert_file = optarg; break;
		case 'k': cfg.key_file = optarg; break;
		case 'r': cfg.require_header = optarg; break;
		case 'o': cfg.out_dir = optarg; break;
		case 'p': ports_file = optarg; break;
		case 'b':
			if ((b = behaviour(optarg)) < 0) {
				fprintf(stderr, "test-collector: unknown behaviour %s\n", optarg);
				return 2;
			}
			break;
		case 'n': count = (unsigned)atoi(optarg); break;
		case 'm': retry_ms = (unsigned)atoi(optarg); break;
		case 'R': cfg.raw_garbage = true; break;
		case 'C': cfg.client_ca_file = optarg; cfg.require_client_cert = true; break;
		case 'z': cfg.expect_gzip = true; break;
		default: return 2;
		}
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	c = collector_start(&cfg);
	if (!c)
		return 1;
	collector_set_behaviour(c, (enum collector_behaviour)b, count, retry_ms);
	if (ports_file) {
		char tmp[4096];
		FILE *f;

		snprintf(tmp, sizeof(tmp), "%s.tmp", ports_file);
		f = fopen(tmp, "w");
		if (!f)
			return 1;
		fprintf(f, "%d %d\n", cfg.grpc_port >= 0 ? collector_grpc_port(c) : 0,
			cfg.http_port >= 0 ? collector_http_port(c) : 0);
		fclose(f);
		rename(tmp, ports_file);
	}
	while (!stop)
		pause();
	collector_get_stats(c, &st);
	collector_stop(c);
	printf("{\"requests\":%u,\"grpc_requests\":%u,\"http_requests\":%u,\"valid\":%u,\"invalid\":%u,"
	       "\"accepted\":%u,\"unauthenticated\":%u,\"http_gzip\":%u,\"slow\":%u,\"garbage_connections\":%u,"
	       "\"wrong_method\":%u,\"not_gzip\":%u,\"samples\":%llu,\"last_error\":\"%s\"}\n",
	       st.requests, st.grpc_requests, st.http_requests, st.valid, st.invalid, st.accepted,
	       st.unauthenticated, st.http_gzip, st.slow, st.garbage_connections, st.wrong_method, st.not_gzip,
	       (unsigned long long)st.samples, st.last_error);
	return 0;
}
