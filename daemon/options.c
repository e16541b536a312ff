#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

enum {
	OPT_FOLLOW_CHILDREN = 0x100,
	OPT_INCLUDE_IDLE,
	OPT_TOP,
	OPT_RINGBUF_SIZE,
	OPT_MAX_STACKS,
	OPT_MAX_SAMPLES,
	OPT_CGROUP,
	OPT_CONTAINER,
	OPT_COMMAND_LINE,
	OPT_ENDPOINT,
	OPT_PROTOCOL,
	OPT_HEADERS,
	OPT_INSECURE,
	OPT_CA_FILE,
	OPT_CLIENT_CERT,
	OPT_CLIENT_KEY,
	OPT_COMPRESSION,
	OPT_TIMEOUT,
	OPT_EXPORT_INTERVAL,
	OPT_MAX_MESSAGE_SIZE,
	OPT_QUEUE_SIZE,
	OPT_QUEUE_BYTES,
	OPT_KUBERNETES,
};

static const struct option long_options[] = {
	{ "frequency", required_argument, NULL, 'F' },
	{ "duration", required_argument, NULL, 'd' },
	{ "pid", required_argument, NULL, 'p' },
	{ "follow-children", no_argument, NULL, OPT_FOLLOW_CHILDREN },
	{ "include-idle", no_argument, NULL, OPT_INCLUDE_IDLE },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "container", required_argument, NULL, OPT_CONTAINER },
	{ "command-line", no_argument, NULL, OPT_COMMAND_LINE },
	{ "kubernetes", required_argument, NULL, OPT_KUBERNETES },
	{ "output", required_argument, NULL, 'o' },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "ringbuf-size", required_argument, NULL, OPT_RINGBUF_SIZE },
	{ "max-stacks", required_argument, NULL, OPT_MAX_STACKS },
	{ "max-samples", required_argument, NULL, OPT_MAX_SAMPLES },
	{ "endpoint", required_argument, NULL, OPT_ENDPOINT },
	{ "protocol", required_argument, NULL, OPT_PROTOCOL },
	{ "headers", required_argument, NULL, OPT_HEADERS },
	{ "insecure", no_argument, NULL, OPT_INSECURE },
	{ "ca-file", required_argument, NULL, OPT_CA_FILE },
	{ "client-cert", required_argument, NULL, OPT_CLIENT_CERT },
	{ "client-key", required_argument, NULL, OPT_CLIENT_KEY },
	{ "compression", required_argument, NULL, OPT_COMPRESSION },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "export-interval", required_argument, NULL, OPT_EXPORT_INTERVAL },
	{ "max-message-size", required_argument, NULL, OPT_MAX_MESSAGE_SIZE },
	{ "queue-size", required_argument, NULL, OPT_QUEUE_SIZE },
	{ "queue-bytes", required_argument, NULL, OPT_QUEUE_BYTES },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 },
};

static void print_usage(FILE *out)
{
	fprintf(out,
		"Usage: otelprofd [OPTION]...\n"
		"Sample the on-CPU stacks of every process on this host (or of the given pids) with eBPF\n"
		"and write a profile.\n"
		"\n"
		"Sampling:\n"
		"  -F, --frequency=HZ        samples per second on each CPU (1-%u; default %u)\n"
		"  -d, --duration=TIME       stop after TIME (30s, 500ms, 2m, 1h; 0 = until SIGINT/SIGTERM;\n"
		"                            default 10s)\n"
		"  -p, --pid=PID[,PID...]    profile only these processes (filtered in the kernel; repeatable)\n"
		"      --follow-children     with --pid, also profile processes the targets start later\n"
		"      --include-idle        keep samples of idle CPUs (the idle task, pid 0)\n"
		"      --cgroup=PATH         profile only this cgroup v2 and those below it (filtered in the\n"
		"                            kernel); PATH as in /proc/PID/cgroup or under /sys/fs/cgroup\n"
		"      --container=ID        profile only this container (full id or a prefix of 12 or more)\n"
		"\n"
		"Metadata:\n"
		"      --command-line        add process.command_line to each process (it can hold secrets)\n"
		"      --kubernetes=MODE     auto, on or off: name pods, namespaces and containers from the\n"
		"                            Kubernetes API (in-cluster service account; default auto: on\n"
		"                            when KUBERNETES_SERVICE_HOST is set)\n"
		"\n"
		"Output:\n"
		"  -o, --output=FILE         FILE.pb.gz: gzipped pprof profile; FILE.folded: folded stacks for\n"
		"                            flame graphs; FILE.otlp: an OTLP ExportProfilesServiceRequest;\n"
		"                            '-': top functions table on stdout (default)\n"
		"      --top=N               rows of the top table (default %u)\n"
		"\n"
		"OTLP export (runs until SIGTERM unless -d is given; flags win over OTEL_EXPORTER_OTLP_*):\n"
		"      --endpoint=URL        collector: host:port, http://host:port or https://host:port\n"
		"                            (gRPC default port 4317; HTTP posts to /v1development/profiles)\n"
		"      --protocol=P          grpc (default) or http/protobuf\n"
		"      --headers=K=V[,K=V]   request headers / gRPC metadata (values %%-encoded)\n"
		"      --insecure            plain text when the endpoint has no scheme (default: TLS)\n"
		"      --ca-file=PEM         CA certificates to verify the collector with\n"
		"      --client-cert=PEM, --client-key=PEM   client certificate and key (mutual TLS)\n"
		"      --compression=C       gzip (default) or none\n"
		"      --timeout=TIME        per-request timeout (default 10s)\n"
		"      --export-interval=TIME  send a profile every TIME, +-10%% jitter (default 10s)\n"
		"      --max-message-size=N  bytes per request, split by process beyond (default 16MiB)\n"
		"      --queue-size=N        requests waiting to be sent; the oldest is dropped beyond (default %u)\n"
		"      --queue-bytes=N       bytes waiting to be sent (default 64MiB)\n"
		"\n"
		"Limits:\n"
		"      --ringbuf-size=KIB    BPF ring buffer size in KiB, a power of two (default %u)\n"
		"      --max-stacks=N        distinct stacks kept per interval; more are dropped and counted\n"
		"                            (default %u)\n"
		"      --max-samples=N       samples kept per interval; more are dropped and counted\n"
		"                            (default %u)\n"
		"\n"
		"Other:\n"
		"  -v, --verbose             log more (debug messages, counters)\n"
		"  -q, --quiet               log only errors\n"
		"  -h, --help                show this help and exit\n"
		"  -V, --version             show the version and exit\n"
		"\n"
		"Needs root, or CAP_BPF, CAP_PERFMON, CAP_SYS_RESOURCE (memlock on older kernels) and read\n"
		"access to other processes' /proc entries (CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH).\n"
		"Exit status: 0 on success, 1 on a runtime failure, 2 on a usage or setup error.\n",
		OPTIONS_MAX_FREQUENCY, OPTIONS_DEFAULT_FREQUENCY, OPTIONS_DEFAULT_TOP,
		EXPORT_DEFAULT_QUEUE_SIZE, OPTIONS_DEFAULT_RINGBUF_KIB, OPTIONS_DEFAULT_MAX_STACKS,
		OPTIONS_DEFAULT_MAX_SAMPLES);
}

int parse_uint(const char *text, unsigned long long min, unsigned long long max,
	       unsigned long long *value)
{
	unsigned long long v;
	char *end;

	if (!text || !*text || *text == '-' || *text == '+' || *text == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*value = v;
	return 0;
}

int parse_duration(const char *text, uint64_t *ns)
{
	static const struct {
		const char *suffix;
		double scale;
	} units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
		{ "m", 60e9 }, { "h", 3600e9 }, { "", 1e9 },
	};
	double v, total;
	char *end;

	if (!text || !*text || *text == '-' || *text == '+' || *text == ' ')
		return -EINVAL;
	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || !isfinite(v) || v < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix))
			continue;
		total = v * units[i].scale;
		if (total >= 1e19) /* past what a uint64 of nanoseconds holds (584 years) */
			return -EINVAL;
		*ns = (uint64_t)total;
		return 0;
	}
	return -EINVAL;
}

static bool process_exists(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

static int add_pids(struct options *opts, const char *list, FILE *err)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long long v;
		pid_t *grown;

		if (parse_uint(tok, 1, INT_MAX, &v)) {
			fprintf(err, "otelprofd: --pid: '%s' is not a process id\n", tok);
			r = -EINVAL;
			break;
		}
		if (!process_exists((pid_t)v)) {
			fprintf(err, "otelprofd: --pid: no process with id %llu\n", v);
			r = -ESRCH;
			break;
		}
		grown = realloc(opts->pids, (opts->npids + 1) * sizeof(*grown));
		if (!grown) {
			r = -ENOMEM;
			break;
		}
		opts->pids = grown;
		opts->pids[opts->npids++] = (pid_t)v;
	}
	if (!r && !opts->npids) {
		fprintf(err, "otelprofd: --pid: no process id given\n");
		r = -EINVAL;
	}
	free(copy);
	return r;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n > m && !strcmp(s + n - m, suffix);
}

static int set_output(struct options *opts, const char *path, FILE *err)
{
	opts->output = path;
	if (!strcmp(path, "-"))
		opts->format = OUTPUT_TOP;
	else if (has_suffix(path, ".pb.gz"))
		opts->format = OUTPUT_PPROF;
	else if (has_suffix(path, ".folded"))
		opts->format = OUTPUT_FOLDED;
	else if (has_suffix(path, ".otlp"))
		opts->format = OUTPUT_OTLP;
	else {
		fprintf(err, "otelprofd: --output: cannot tell the format of '%s' "
			"(use FILE.pb.gz, FILE.folded, FILE.otlp or -)\n", path);
		return -EINVAL;
	}
	return 0;
}

static int number_option(const char *name, const char *arg, unsigned long long min,
			 unsigned long long max, unsigned long long *value, FILE *err)
{
	int r = parse_uint(arg, min, max, value);

	if (r == -ERANGE)
		fprintf(err, "otelprofd: --%s: %s is out of range (%llu-%llu)\n", name, arg, min, max);
	else if (r)
		fprintf(err, "otelprofd: --%s: '%s' is not a number\n", name, arg);
	return r;
}

static const char *plain_getenv(const char *name)
{
	return getenv(name);
}

static int size_option(const char *name, const char *arg, size_t min, size_t *value, FILE *err)
{
	if (parse_size(arg, value) || *value < min) {
		fprintf(err, "otelprofd: --%s: '%s' is not a size of at least %zu (examples: 4096, 512KiB, 16MiB)\n",
			name, arg, min);
		return -EINVAL;
	}
	return 0;
}

static int duration_option(const char *name, const char *arg, uint64_t min_ns, uint64_t *ns, FILE *err)
{
	if (parse_duration(arg, ns) || *ns < min_ns) {
		fprintf(err, "otelprofd: --%s: '%s' is not a duration of at least %llums (examples: 10s, 500ms)\n",
			name, arg, (unsigned long long)(min_ns / 1000000));
		return -EINVAL;
	}
	return 0;
}

/* The export flags; false when c is not one of them. *bad tells a usage error. */
static bool export_option(struct export_config *e, int c, const char *arg, FILE *err, bool *bad)
{
	unsigned long long v;

	switch (c) {
	case OPT_ENDPOINT:
		e->endpoint = arg;
		break;
	case OPT_PROTOCOL:
		if (!strcmp(arg, "grpc"))
			e->protocol = EXPORT_PROTOCOL_GRPC;
		else if (!strcmp(arg, "http/protobuf") || !strcmp(arg, "http"))
			e->protocol = EXPORT_PROTOCOL_HTTP;
		else {
			fprintf(err, "otelprofd: --protocol: '%s' is not supported (grpc or http/protobuf)\n", arg);
			*bad = true;
		}
		break;
	case OPT_HEADERS:
		e->headers_text = arg;
		break;
	case OPT_INSECURE:
		e->insecure = EXPORT_YES;
		break;
	case OPT_CA_FILE:
		e->ca_file = arg;
		break;
	case OPT_CLIENT_CERT:
		e->client_cert = arg;
		break;
	case OPT_CLIENT_KEY:
		e->client_key = arg;
		break;
	case OPT_COMPRESSION:
		if (!strcmp(arg, "gzip"))
			e->compression = EXPORT_COMPRESSION_GZIP;
		else if (!strcmp(arg, "none"))
			e->compression = EXPORT_COMPRESSION_NONE;
		else {
			fprintf(err, "otelprofd: --compression: '%s' is not supported (gzip or none)\n", arg);
			*bad = true;
		}
		break;
	case OPT_TIMEOUT:
		*bad = duration_option("timeout", arg, 1000000, &e->timeout_ns, err);
		break;
	case OPT_EXPORT_INTERVAL:
		*bad = duration_option("export-interval", arg, 100000000, &e->interval_ns, err);
		break;
	case OPT_MAX_MESSAGE_SIZE:
		*bad = size_option("max-message-size", arg, 4096, &e->max_message_size, err);
		break;
	case OPT_QUEUE_SIZE:
		*bad = number_option("queue-size", arg, 1, 100000, &v, err);
		e->queue_size = (size_t)v;
		break;
	case OPT_QUEUE_BYTES:
		*bad = size_option("queue-bytes", arg, 4096, &e->queue_bytes, err);
		break;
	default:
		return false;
	}
	return true;
}

enum options_result options_parse(struct options *opts, int argc, char **argv, FILE *out, FILE *err)
{
	unsigned long long v;
	bool bad = false;
	int c;

	*opts = (struct options){
		.frequency = OPTIONS_DEFAULT_FREQUENCY,
		.duration_ns = OPTIONS_DEFAULT_DURATION_NS,
		.format = OUTPUT_TOP,
		.top = OPTIONS_DEFAULT_TOP,
		.ringbuf_kib = OPTIONS_DEFAULT_RINGBUF_KIB,
		.max_stacks = OPTIONS_DEFAULT_MAX_STACKS,
		.max_samples = OPTIONS_DEFAULT_MAX_SAMPLES,
	};

	optind = 0; /* GNU getopt: full reinitialisation, so parsing can run more than once */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":F:d:p:o:vqhV", long_options, NULL)) != -1) {
		if (export_option(&opts->export, c, optarg, err, &bad)) {
			if (bad)
				goto usage;
			continue;
		}
		switch (c) {
		case 'F':
			if (number_option("frequency", optarg, 1, OPTIONS_MAX_FREQUENCY, &v, err))
				goto usage;
			opts->frequency = (unsigned)v;
			break;
		case 'd':
			if (parse_duration(optarg, &opts->duration_ns)) {
				fprintf(err, "otelprofd: --duration: '%s' is not a duration "
					"(examples: 30s, 500ms, 2m)\n", optarg);
				goto usage;
			}
			opts->duration_set = true;
			break;
		case 'p':
			if (add_pids(opts, optarg, err))
				goto usage;
			break;
		case OPT_FOLLOW_CHILDREN:
			opts->follow_children = true;
			break;
		case OPT_INCLUDE_IDLE:
			opts->include_idle = true;
			break;
		case OPT_CGROUP:
			if (!optarg[0]) {
				fprintf(err, "otelprofd: --cgroup: empty path\n");
				goto usage;
			}
			opts->cgroup = optarg;
			break;
		case OPT_CONTAINER:
			if (strlen(optarg) < 12 || strlen(optarg) > 64 || strspn(optarg, "0123456789abcdefABCDEF") != strlen(optarg)) {
				fprintf(err, "otelprofd: --container: '%s' is not a container id (12 to 64 hex digits)\n", optarg);
				goto usage;
			}
			opts->container = optarg;
			break;
		case OPT_COMMAND_LINE:
			opts->command_line = true;
			break;
		case OPT_KUBERNETES:
			if (!strcmp(optarg, "auto"))
				opts->kubernetes = KUBERNETES_AUTO;
			else if (!strcmp(optarg, "on"))
				opts->kubernetes = KUBERNETES_ON;
			else if (!strcmp(optarg, "off"))
				opts->kubernetes = KUBERNETES_OFF;
			else {
				fprintf(err, "otelprofd: --kubernetes: '%s' is not auto, on or off\n", optarg);
				goto usage;
			}
			break;
		case 'o':
			if (set_output(opts, optarg, err))
				goto usage;
			break;
		case OPT_TOP:
			if (number_option("top", optarg, 1, 100000, &v, err))
				goto usage;
			opts->top = (unsigned)v;
			break;
		case OPT_RINGBUF_SIZE:
			if (number_option("ringbuf-size", optarg, 64, 1 << 20, &v, err))
				goto usage;
			if (v & (v - 1)) {
				fprintf(err, "otelprofd: --ringbuf-size: %llu is not a power of two\n", v);
				goto usage;
			}
			opts->ringbuf_kib = (unsigned)v;
			break;
		case OPT_MAX_STACKS:
			if (number_option("max-stacks", optarg, 1, 1 << 24, &v, err))
				goto usage;
			opts->max_stacks = v;
			break;
		case OPT_MAX_SAMPLES:
			if (number_option("max-samples", optarg, 1, 1ULL << 32, &v, err))
				goto usage;
			opts->max_samples = v;
			break;
		case 'v':
			opts->verbose = true;
			break;
		case 'q':
			opts->quiet = true;
			break;
		case 'h':
			print_usage(out);
			return OPTIONS_EXIT;
		case 'V':
			fprintf(out, "otelprofd %s\n", OTELPROFD_VERSION);
			return OPTIONS_EXIT;
		case ':':
			fprintf(err, "otelprofd: option '%s' needs a value\n", argv[optind - 1]);
			goto usage;
		default:
			if (optopt)
				fprintf(err, "otelprofd: unknown option '-%c'\n", optopt);
			else
				fprintf(err, "otelprofd: unknown option '%s'\n", argv[optind - 1]);
			goto usage;
		}
	}
	if (optind < argc) {
		fprintf(err, "otelprofd: unexpected argument '%s'\n", argv[optind]);
		goto usage;
	}
	if (opts->follow_children && !opts->npids) {
		fprintf(err, "otelprofd: --follow-children needs --pid\n");
		goto usage;
	}
	if (opts->verbose && opts->quiet) {
		fprintf(err, "otelprofd: --verbose and --quiet exclude each other\n");
		goto usage;
	}
	if (otel_env_apply(&opts->export, plain_getenv, err))
		goto usage;
	if (opts->export.enabled && opts->output) {
		if (opts->export.endpoint) {
			fprintf(err, "otelprofd: --output and --endpoint exclude each other\n");
			goto usage;
		}
		/* An ad hoc run writing a file ignores a collector configured in the environment. */
		opts->export.enabled = false;
	}
	/* A collector makes otelprofd a daemon: it runs until SIGTERM unless told a duration. */
	if (opts->export.enabled && !opts->duration_set)
		opts->duration_ns = 0;
	return OPTIONS_OK;

usage:
	fprintf(err, "Try 'otelprofd --help' for more information.\n");
	options_free(opts);
	return OPTIONS_USAGE;
}

void options_free(struct options *opts)
{
	if (!opts)
		return;
	free(opts->pids);
	export_config_free(&opts->export);
	opts->pids = NULL;
	opts->npids = 0;
}
