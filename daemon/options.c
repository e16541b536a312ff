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
		"                            flame graphs; '-': top functions table on stdout (default)\n"
		"      --top=N               rows of the top table (default %u)\n"
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
		OPTIONS_DEFAULT_RINGBUF_KIB, OPTIONS_DEFAULT_MAX_STACKS, OPTIONS_DEFAULT_MAX_SAMPLES);
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
	else {
		fprintf(err, "otelprofd: --output: cannot tell the format of '%s' "
			"(use FILE.pb.gz, FILE.folded or -)\n", path);
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

enum options_result options_parse(struct options *opts, int argc, char **argv, FILE *out, FILE *err)
{
	unsigned long long v;
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
	opts->pids = NULL;
	opts->npids = 0;
}
