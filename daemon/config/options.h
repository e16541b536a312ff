/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon/config/: what the daemon is told to do. Flags and the configuration file (options,
 * export_flags, options_help, config_file); the OTEL_* variables are read by export/otel_env. May
 * include export/ (struct options embeds the exporter's configuration) and the top-level helpers.
 * Included by main.c and ops/ only.
 */
/*
 * Command-line options. options_parse() fills a struct options from argv; options_free() releases
 * what it allocated (the pid array). Strings point into argv and are not copied.
 */
#ifndef OTELPROFD_OPTIONS_H
#define OTELPROFD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "export/otel_env.h"

#define OPTIONS_DEFAULT_FREQUENCY 19
/* Without --frequency, a run with --pid or shorter than OPTIONS_AD_HOC_NS samples at this rate. */
#define OPTIONS_AD_HOC_FREQUENCY 99
#define OPTIONS_AD_HOC_NS (60ULL * 1000000000ULL)
#define OPTIONS_MAX_FREQUENCY 10000
#define OPTIONS_DEFAULT_DURATION_NS (10ULL * 1000000000ULL)
#define OPTIONS_DEFAULT_TOP 20
#define OPTIONS_DEFAULT_RINGBUF_KIB 4096
#define OPTIONS_DEFAULT_STACK_COPY 16384
/* A host watched as a service: its RSS stayed at 45-63 MiB with the cache full (docs/memory.md); a
 * module's debug info is used up to 16 MiB (libc's is 15.4), larger ones get their ELF symbols. An
 * evicted module keeps its file open for the processes still pointing at it, so one that exited
 * before its samples were symbolized keeps its frames named (test pid-reuse, suite symbols-bpf). */
#define OPTIONS_DEFAULT_SYMBOL_CACHE (32ULL << 20)
/* An ad hoc look (the runs OPTIONS_AD_HOC_FREQUENCY is for): short, and source lines matter more. */
#define OPTIONS_AD_HOC_SYMBOL_CACHE (64ULL << 20)
/* A host watched as a service: its resident memory is kept under this by giving the symbol cache
 * what the rest of the daemon leaves of it (issue 30: 48 MiB at 20,000 samples a second; the rest
 * takes 25-35 MiB there, gRPC's libraries 10 of it). An ad hoc look keeps its whole cache (0: none). */
#define OPTIONS_DEFAULT_MEMORY_LIMIT (48ULL << 20)
#define OPTIONS_AD_HOC_MEMORY_LIMIT 0
#define OPTIONS_DEFAULT_MAX_STACKS 65536
#define OPTIONS_DEFAULT_MAX_SAMPLES 1000000
/* Exporting, an interval whose samples hold more ends early (docs/memory.md): at 20,000 samples a
 * second the profile built from 10 s of them, and its requests, would take tens of MiB. */
#define OPTIONS_DEFAULT_INTERVAL_MEMORY (4u << 20)
#define OPTIONS_DEFAULT_STATS_INTERVAL_NS (60ULL * 1000000000ULL)
/* --off-cpu: one switch-out in 20 takes stacks (the cost), waits scaled by 20; bench/RESULTS.md. */
#define OPTIONS_DEFAULT_OFF_CPU_PROBABILITY 0.05
#define OPTIONS_DEFAULT_OFF_CPU_THRESHOLD_NS 0
/* --alloc: live sampled allocations kept (sampling/heap.h's HEAP_MAX_LIVE). */
#define OPTIONS_DEFAULT_ALLOC_MAX_LIVE 65536

/* Chosen by --format, else by the -o file's name (the suffix in each comment). */
enum output_format {
	OUTPUT_TOP,    /* "-" or no -o: top-N functions table */
	OUTPUT_FOLDED, /* *.folded: comm;frame;frame count */
	OUTPUT_PPROF,  /* *.pb.gz: gzipped perftools.profiles.Profile */
	OUTPUT_OTLP,   /* *.otlp: one OTLP ExportProfilesServiceRequest (binary protobuf) */
	OUTPUT_HTML,   /* *.html: a self-contained page with an interactive flame graph */
};

enum kubernetes_mode {
	KUBERNETES_AUTO, /* watch the API server's pods when running in a cluster (KUBERNETES_SERVICE_HOST set) */
	KUBERNETES_ON,   /* watch them, and say why when that cannot be done */
	KUBERNETES_OFF,
};

struct options {
	unsigned frequency;       /* samples per second per CPU */
	uint64_t duration_ns;     /* stop after this long; 0 = until SIGINT/SIGTERM */
	bool duration_set;        /* -d given (with a collector the default is to run until SIGTERM) */
	pid_t *pids;              /* --pid targets (owned); NULL = every process */
	size_t npids;
	bool follow_children;     /* also profile children the targets start */
	bool include_idle;        /* keep samples of the idle task */
	const char *cgroup;       /* --cgroup: profile only this cgroup and those below it; NULL = all */
	const char *container;    /* --container: profile only this container (id or prefix); NULL = all */
	bool command_line;        /* add process.command_line (it can hold secrets) */
	enum kubernetes_mode kubernetes; /* --kubernetes: pod, namespace and container names from the API */
	const char *metrics_address; /* --metrics-address HOST:PORT: Prometheus /metrics and /ready */
	uint64_t stats_interval_ns; /* --stats-interval: a summary log line this often; 0 = never */
	const char *config_path;  /* --config FILE */
	bool check_config;        /* --check-config: validate the configuration and exit */
	struct config_file *config; /* the file read (owned): string options may point into it */
	const char *output;       /* -o path, "-" for stdout; NULL = stdout */
	enum output_format format;
	bool format_set;          /* --format given: the file name does not choose it */
	unsigned top;             /* rows of the top table */
	unsigned ringbuf_kib;     /* BPF ring buffer size */
	unsigned stack_copy;      /* bytes of user stack copied per sample (0: frame pointers only) */
	uint64_t symbol_cache;    /* bytes of binaries and debug info the symbolizer keeps cached */
	uint64_t memory_limit;    /* --memory-limit: resident bytes the symbol cache is shrunk to keep
				     the daemon under (ops/memory_limit.h); 0: none */
	double max_cpu;           /* --max-cpu: the daemon's CPU ceiling in percent of one CPU; 0: none */
	size_t max_stacks;        /* bound on distinct stacks aggregated per interval */
	size_t max_samples;       /* bound on samples aggregated per interval */
	size_t interval_memory;   /* exporting, an interval whose samples hold more bytes ends early */
	bool verbose;
	bool quiet;
	struct export_config export; /* OTLP collector: flags, then OTEL_* variables (owned) */
	bool no_trace_context;    /* --no-trace-context: no OTEP 4719/4947 reading, no links */
	bool no_jvm_attach;       /* --no-jvm-attach: JVMs are not asked for their perf maps */
	bool off_cpu;             /* --off-cpu: also where threads wait (sched_switch) */
	uint64_t off_cpu_threshold_ns; /* waits shorter than this are not reported */
	double off_cpu_probability;    /* of a switch-out taking stacks, (0, 1] */
	unsigned off_cpu_max_inflight; /* bound of the kernel's in-flight map (sampled tasks away) */
	bool alloc;               /* --alloc: allocation and in-use profiles (otel_memory USDT probes) */
	uint64_t alloc_sample;    /* --alloc-sample: mean bytes between samples in the processes otelprofd
				     starts (OTELPROFD_ALLOC_SAMPLE); 0: the library's default */
	size_t alloc_max_live;    /* --alloc-max-live: live sampled allocations kept for the in-use profile */
	char **command;           /* -- PROGRAM ARGS: start it and profile it until it exits (points into
				     argv, NULL-terminated); NULL: none */
};

struct config_file;

enum options_result {
	OPTIONS_OK = 0,    /* run */
	OPTIONS_EXIT = 1,  /* --help, --version or a valid --check-config: exit 0 */
	OPTIONS_USAGE = 2, /* bad usage was reported on err: exit 2 */
};

/*
 * Parse argv into opts (which it initialises), then the configuration file (--config), then the
 * environment: flags win over the environment, which wins over the file, which wins over the
 * defaults. Messages go to out (help, version) and err. options_free() releases opts.
 */
enum options_result options_parse(struct options *opts, int argc, char **argv, FILE *out, FILE *err);
void options_free(struct options *opts);

#endif
