// SPDX-License-Identifier: Apache-2.0
/*
 * Flags, then the configuration file, then the checks between options, into struct options. The
 * collector's flags and the OTEL_* variables under them are export_flags.c; --help is options_help.c.
 */
#include "config/options_parts.h"

#include "config/config_file.h"
#include "parse_units.h"
#include "parse.h"
#include "records.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static const struct option long_options[] = {
	{ "frequency", required_argument, NULL, 'F' },
	{ "duration", required_argument, NULL, 'd' },
	{ "pid", required_argument, NULL, 'p' },
	{ "follow-children", no_argument, NULL, OPT_FOLLOW_CHILDREN },
	{ "include-idle", no_argument, NULL, OPT_INCLUDE_IDLE },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "container", required_argument, NULL, OPT_CONTAINER },
	{ "command-line", no_argument, NULL, OPT_COMMAND_LINE },
	{ "no-trace-context", no_argument, NULL, OPT_NO_TRACE_CONTEXT },
	{ "no-jvm-attach", no_argument, NULL, OPT_NO_JVM_ATTACH },
	{ "kubernetes", required_argument, NULL, OPT_KUBERNETES },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "ringbuf-size", required_argument, NULL, OPT_RINGBUF_SIZE },
	{ "max-stacks", required_argument, NULL, OPT_MAX_STACKS },
	{ "max-samples", required_argument, NULL, OPT_MAX_SAMPLES },
	{ "interval-memory", required_argument, NULL, OPT_INTERVAL_MEMORY },
	{ "stack-copy", required_argument, NULL, OPT_STACK_COPY },
	{ "symbol-cache", required_argument, NULL, OPT_SYMBOL_CACHE },
	{ "memory-limit", required_argument, NULL, OPT_MEMORY_LIMIT },
	{ "max-cpu", required_argument, NULL, OPT_MAX_CPU },
	{ "off-cpu", no_argument, NULL, OPT_OFF_CPU },
	{ "off-cpu-threshold", required_argument, NULL, OPT_OFF_CPU_THRESHOLD },
	{ "off-cpu-probability", required_argument, NULL, OPT_OFF_CPU_PROBABILITY },
	{ "off-cpu-max-inflight", required_argument, NULL, OPT_OFF_CPU_MAX_INFLIGHT },
	{ "alloc", no_argument, NULL, OPT_ALLOC },
	{ "alloc-sample", required_argument, NULL, OPT_ALLOC_SAMPLE },
	{ "alloc-max-live", required_argument, NULL, OPT_ALLOC_MAX_LIVE },
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
	{ "metrics-address", required_argument, NULL, OPT_METRICS_ADDRESS },
	{ "stats-interval", required_argument, NULL, OPT_STATS_INTERVAL },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "check-config", no_argument, NULL, OPT_CHECK_CONFIG },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 },
};

static bool process_exists(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

static int add_pids(struct options *opts, const char *list, FILE *err)
{
	char *copy = strdup(list), *tok, *next;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	/* Split by hand: strtok() would pass over the empty elements of "1,,2" and "1," silently. */
	for (tok = copy; tok; tok = next) {
		unsigned long long v;
		pid_t *grown;

		next = strchr(tok, ',');
		if (next)
			*next++ = 0;
		if (!*tok) {
			fprintf(err, "otelprofd: --pid: empty element in '%s' (PID[,PID...])\n", list);
			r = -EINVAL;
			break;
		}
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

static const char *const format_names[] = {
	[OUTPUT_TOP] = "top", [OUTPUT_FOLDED] = "folded", [OUTPUT_PPROF] = "pprof", [OUTPUT_OTLP] = "otlp",
	[OUTPUT_HTML] = "html",
};

static int set_format(struct options *opts, const char *name, FILE *err)
{
	for (size_t i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++)
		if (!strcmp(name, format_names[i])) {
			opts->format = (enum output_format)i;
			opts->format_set = true;
			return 0;
		}
	fprintf(err, "otelprofd: --format: '%s' is not top, folded, pprof, otlp or html\n", name);
	return -EINVAL;
}

/* The format from the -o file's name, unless --format said it. */
static int format_from_output(struct options *opts, FILE *err)
{
	const char *path = opts->output;

	if (opts->format_set || !path || !strcmp(path, "-"))
		return 0;
	if (has_suffix(path, ".pb.gz"))
		opts->format = OUTPUT_PPROF;
	else if (has_suffix(path, ".folded"))
		opts->format = OUTPUT_FOLDED;
	else if (has_suffix(path, ".otlp"))
		opts->format = OUTPUT_OTLP;
	else if (has_suffix(path, ".html") || has_suffix(path, ".htm"))
		opts->format = OUTPUT_HTML;
	else {
		fprintf(err, "otelprofd: --output: cannot tell the format of '%s' "
			"(use FILE.html, FILE.pb.gz, FILE.folded, FILE.otlp or -, or --format)\n", path);
		return -EINVAL;
	}
	return 0;
}

int options_number_value(const char *name, const char *arg, unsigned long long min, unsigned long long max,
			 unsigned long long *value, FILE *err)
{
	int r = parse_uint(arg, min, max, value);

	if (r == -ERANGE)
		fprintf(err, "otelprofd: --%s: %s is out of range (%llu-%llu)\n", name, arg, min, max);
	else if (r)
		fprintf(err, "otelprofd: --%s: '%s' is not a number\n", name, arg);
	return r;
}

static int probability_option(const char *name, const char *arg, double *value, FILE *err)
{
	char *end;

	if (!*arg || strspn(arg, "0123456789.") != strlen(arg) || strchr(arg, '.') != strrchr(arg, '.') ||
	    (*value = strtod(arg, &end), *end) || !(*value > 0 && *value <= 1)) {
		fprintf(err, "otelprofd: --%s: '%s' is not a probability above 0 and at most 1 (example: 0.05)\n",
			name, arg);
		return -EINVAL;
	}
	return 0;
}

static void options_init(struct options *opts)
{
	*opts = (struct options){
		.frequency = OPTIONS_DEFAULT_FREQUENCY,
		.duration_ns = OPTIONS_DEFAULT_DURATION_NS,
		.format = OUTPUT_TOP,
		.top = OPTIONS_DEFAULT_TOP,
		.ringbuf_kib = OPTIONS_DEFAULT_RINGBUF_KIB,
		.stack_copy = OPTIONS_DEFAULT_STACK_COPY,
		.symbol_cache = OPTIONS_DEFAULT_SYMBOL_CACHE,
		.memory_limit = OPTIONS_DEFAULT_MEMORY_LIMIT,
		.max_stacks = OPTIONS_DEFAULT_MAX_STACKS,
		.max_samples = OPTIONS_DEFAULT_MAX_SAMPLES,
		.interval_memory = OPTIONS_DEFAULT_INTERVAL_MEMORY,
		.stats_interval_ns = OPTIONS_DEFAULT_STATS_INTERVAL_NS,
		.off_cpu_threshold_ns = OPTIONS_DEFAULT_OFF_CPU_THRESHOLD_NS,
		.off_cpu_probability = OPTIONS_DEFAULT_OFF_CPU_PROBABILITY,
		.off_cpu_max_inflight = OTELPROF_OFF_CPU_INFLIGHT,
		.alloc_max_live = OPTIONS_DEFAULT_ALLOC_MAX_LIVE,
	};
}

/*
 * Set one option from a flag or a configuration file entry (arg is NULL for options without a
 * value). 0, -EINVAL after a message on err, or -ENOENT when c is not a settable option.
 */
static const char *option_name(int c);

static int apply_option(struct options *opts, int c, const char *arg, FILE *err)
{
	unsigned long long v;
	bool bad = false;

	/* No value needs one, and paths, addresses and headers end up in log lines and requests
	 * (the value itself is not shown: it may be a header's secret). */
	if (arg && parse_has_control(arg)) {
		fprintf(err, "otelprofd: --%s: control characters are not allowed in the value\n", option_name(c));
		return -EINVAL;
	}
	if (export_flags_apply(&opts->export, c, arg, err, &bad))
		return bad ? -EINVAL : 0;
	switch (c) {
	case 'F':
		if (options_number_value("frequency", arg, 1, OPTIONS_MAX_FREQUENCY, &v, err))
			return -EINVAL;
		opts->frequency = (unsigned)v;
		break;
	case 'd':
		if (parse_duration(arg, &opts->duration_ns)) {
			fprintf(err, "otelprofd: --duration: '%s' is not a duration "
				"(examples: 30s, 500ms, 2m)\n", arg);
			return -EINVAL;
		}
		opts->duration_set = true;
		break;
	case 'p':
		if (add_pids(opts, arg, err))
			return -EINVAL;
		break;
	case OPT_FOLLOW_CHILDREN:
		opts->follow_children = true;
		break;
	case OPT_INCLUDE_IDLE:
		opts->include_idle = true;
		break;
	case OPT_CGROUP:
		if (!arg[0]) {
			fprintf(err, "otelprofd: --cgroup: empty path\n");
			return -EINVAL;
		}
		opts->cgroup = arg;
		break;
	case OPT_CONTAINER:
		if (strlen(arg) < 12 || strlen(arg) > 64 || strspn(arg, "0123456789abcdefABCDEF") != strlen(arg)) {
			fprintf(err, "otelprofd: --container: '%s' is not a container id (12 to 64 hex digits)\n", arg);
			return -EINVAL;
		}
		opts->container = arg;
		break;
	case OPT_NO_TRACE_CONTEXT:
		opts->no_trace_context = true;
		break;
	case OPT_NO_JVM_ATTACH:
		opts->no_jvm_attach = true;
		break;
	case OPT_COMMAND_LINE:
		opts->command_line = true;
		break;
	case OPT_KUBERNETES:
		if (!strcmp(arg, "auto"))
			opts->kubernetes = KUBERNETES_AUTO;
		else if (!strcmp(arg, "on"))
			opts->kubernetes = KUBERNETES_ON;
		else if (!strcmp(arg, "off"))
			opts->kubernetes = KUBERNETES_OFF;
		else {
			fprintf(err, "otelprofd: --kubernetes: '%s' is not auto, on or off\n", arg);
			return -EINVAL;
		}
		break;
	case 'o':
		if (!*arg) {
			fprintf(err, "otelprofd: --output: empty path (use - for standard output)\n");
			return -EINVAL;
		}
		opts->output = arg;
		break;
	case OPT_FORMAT:
		if (set_format(opts, arg, err))
			return -EINVAL;
		break;
	case OPT_TOP:
		if (options_number_value("top", arg, 1, 100000, &v, err))
			return -EINVAL;
		opts->top = (unsigned)v;
		break;
	case OPT_RINGBUF_SIZE: {
		size_t bytes;

		/* A size with its unit; a plain number is KiB, as before units were taken. */
		if (parse_size_plain_scale(arg, 1024, &bytes) || bytes < (64u << 10) || bytes > (1u << 30) ||
		    (bytes & (bytes - 1))) {
			fprintf(err, "otelprofd: --ringbuf-size: '%s' is not a power of two from 64KiB to 1GiB "
				"(examples: 4MiB, 512KiB; a plain number counts KiB)\n", arg);
			return -EINVAL;
		}
		opts->ringbuf_kib = (unsigned)(bytes >> 10);
		break;
	}
	case OPT_STACK_COPY: {
		size_t bytes;

		if (parse_size(arg, &bytes) || bytes > OTELPROF_MAX_STACK_COPY) {
			fprintf(err, "otelprofd: --stack-copy: '%s' is not a size from 0 to 64KiB\n", arg);
			return -EINVAL;
		}
		opts->stack_copy = (unsigned)bytes;
		break;
	}
	case OPT_SYMBOL_CACHE: {
		size_t bytes;

		if (parse_size(arg, &bytes) || bytes < (1u << 20)) {
			fprintf(err, "otelprofd: --symbol-cache: '%s' is not a size of at least 1MiB\n", arg);
			return -EINVAL;
		}
		opts->symbol_cache = bytes;
		break;
	}
	case OPT_MEMORY_LIMIT: {
		size_t bytes;

		if (parse_size(arg, &bytes) || (bytes && bytes < (1u << 20))) {
			fprintf(err, "otelprofd: --memory-limit: '%s' is not 0 or a size of at least 1MiB\n", arg);
			return -EINVAL;
		}
		opts->memory_limit = bytes;
		break;
	}
	case OPT_INTERVAL_MEMORY: {
		size_t bytes;

		if (parse_size(arg, &bytes) || bytes < (64u << 10) || bytes > (1ULL << 30)) {
			fprintf(err, "otelprofd: --interval-memory: '%s' is not a size from 64KiB to 1GiB\n", arg);
			return -EINVAL;
		}
		opts->interval_memory = bytes;
		break;
	}
	case OPT_MAX_CPU: {
		char *end;

		/* Percent of one CPU: 0 is off; the daemon runs on one thread mostly, its helpers seldom. */
		if (!*arg || strspn(arg, "0123456789.") != strlen(arg) || strchr(arg, '.') != strrchr(arg, '.') ||
		    (opts->max_cpu = strtod(arg, &end), *end) || opts->max_cpu > 100) {
			fprintf(err, "otelprofd: --max-cpu: '%s' is not a percentage of one CPU from 0 (off) to 100 "
				"(example: 10)\n", arg);
			return -EINVAL;
		}
		break;
	}
	case OPT_MAX_STACKS:
		if (options_number_value("max-stacks", arg, 1, 1 << 24, &v, err))
			return -EINVAL;
		opts->max_stacks = v;
		break;
	case OPT_MAX_SAMPLES:
		if (options_number_value("max-samples", arg, 1, 1ULL << 32, &v, err))
			return -EINVAL;
		opts->max_samples = v;
		break;
	case OPT_OFF_CPU:
		opts->off_cpu = true;
		break;
	case OPT_OFF_CPU_THRESHOLD:
		if (parse_duration(arg, &opts->off_cpu_threshold_ns)) {
			fprintf(err, "otelprofd: --off-cpu-threshold: '%s' is not a duration (examples: 0, 100us, 1ms)\n",
				arg);
			return -EINVAL;
		}
		break;
	case OPT_OFF_CPU_PROBABILITY:
		if (probability_option("off-cpu-probability", arg, &opts->off_cpu_probability, err))
			return -EINVAL;
		break;
	case OPT_OFF_CPU_MAX_INFLIGHT:
		if (options_number_value("off-cpu-max-inflight", arg, 1, 1 << 22, &v, err))
			return -EINVAL;
		opts->off_cpu_max_inflight = (unsigned)v;
		break;
	case OPT_ALLOC:
		opts->alloc = true;
		break;
	case OPT_ALLOC_SAMPLE: {
		size_t bytes;

		if (parse_size(arg, &bytes) || bytes < 1 || bytes > (1ULL << 40)) {
			fprintf(err, "otelprofd: --alloc-sample: '%s' is not a size from 1 to 1TiB (examples: 512KiB, 16384)\n",
				arg);
			return -EINVAL;
		}
		opts->alloc_sample = bytes;
		break;
	}
	case OPT_ALLOC_MAX_LIVE:
		if (options_number_value("alloc-max-live", arg, 1, 1 << 24, &v, err))
			return -EINVAL;
		opts->alloc_max_live = (size_t)v;
		break;
	case 'v':
		opts->verbose = true;
		break;
	case 'q':
		opts->quiet = true;
		break;
	case OPT_METRICS_ADDRESS: {
		const char *why;
		char host[256];
		unsigned port;

		if (parse_host_port(arg, strlen(arg), true, host, sizeof(host), &port, &why)) {
			fprintf(err, "otelprofd: --metrics-address: '%s' is not HOST:PORT: %s (example: 127.0.0.1:9464)\n",
				arg, why);
			return -EINVAL;
		}
		opts->metrics_address = arg;
		break;
	}
	case OPT_STATS_INTERVAL:
		if (parse_duration(arg, &opts->stats_interval_ns) ||
		    (opts->stats_interval_ns && opts->stats_interval_ns < 1000000000ULL)) {
			fprintf(err, "otelprofd: --stats-interval: '%s' is not a duration of 1s or more (or 0)\n", arg);
			return -EINVAL;
		}
		break;
	default:
		return -ENOENT;
	}
	return 0;
}

static const struct option *find_long_option(const char *name)
{
	for (const struct option *o = long_options; o->name; o++)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}

/* Options that only make sense on the command line. */
static bool command_line_only(int c)
{
	return c == 'h' || c == 'V' || c == OPT_CONFIG || c == OPT_CHECK_CONFIG;
}

/* "yes"/"no" for options without a value. 1, 0, or -EINVAL. */
static int parse_bool(const char *v)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1"))
		return 1;
	if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0"))
		return 0;
	return -EINVAL;
}

/*
 * Check one entry by applying it to a scratch copy, so a bad value is reported with its file and
 * line. 0 when valid (value_out says what to apply: NULL for a flag, or nothing when *skip).
 */
static int check_entry(const struct config_file *cf, const struct config_entry *e, const struct option **out,
		       const char **value_out, bool *skip, FILE *err)
{
	const struct option *o = find_long_option(e->key);
	struct options scratch;
	char *msg = NULL;
	size_t len = 0;
	FILE *mem;
	int r;

	*skip = false;
	*value_out = e->value;
	if (!o || command_line_only(o->val)) {
		fprintf(err, "otelprofd: %s:%u: unknown key '%s'\n", cf->name, e->line, e->key);
		return -EINVAL;
	}
	if (o->has_arg == no_argument) {
		r = parse_bool(e->value);
		if (r < 0) {
			char shown[64];

			fprintf(err, "otelprofd: %s:%u: %s: '%s' is not yes or no\n", cf->name, e->line, e->key,
				parse_escape(e->value, shown, sizeof(shown)));
			return -EINVAL;
		}
		*skip = r == 0;
		*value_out = NULL;
	} else if (!e->value[0]) {
		fprintf(err, "otelprofd: %s:%u: %s needs a value\n", cf->name, e->line, e->key);
		return -EINVAL;
	}
	mem = open_memstream(&msg, &len);
	if (!mem)
		return -ENOMEM;
	options_init(&scratch);
	r = *skip ? 0 : apply_option(&scratch, o->val, *value_out, mem);
	options_free(&scratch);
	fclose(mem);
	if (r) {
		const char *text = msg && !strncmp(msg, "otelprofd: ", 11) ? msg + 11 : msg ? msg : "invalid value\n";

		fprintf(err, "otelprofd: %s:%u: %s", cf->name, e->line, text);
	}
	free(msg);
	*out = o;
	return r ? -EINVAL : 0;
}

/* Apply the configuration file under what the flags (set[]) and the environment already said;
 * line[c] is the file's line of each option it set, for errors about two options. */
static int apply_config_file(struct options *opts, const char *path, const bool *set, unsigned *line, FILE *err)
{
	char msg[512];
	int r = config_file_load(path, &opts->config, msg, sizeof(msg));

	if (r) {
		fprintf(err, "otelprofd: %s\n", msg);
		return r;
	}
	for (size_t i = 0; i < opts->config->nentries; i++) {
		const struct config_entry *e = &opts->config->entries[i];
		const struct option *o;
		const char *value;
		bool skip;

		r = check_entry(opts->config, e, &o, &value, &skip, err);
		if (r)
			return r;
		if (skip || set[o->val] || export_flags_environment_sets(o->val))
			continue;
		r = apply_option(opts, o->val, value, err);
		if (r)
			return r;
		line[o->val] = e->line;
	}
	return 0;
}

static const char *option_name(int c)
{
	for (const struct option *o = long_options; o->name; o++)
		if (o->val == c)
			return o->name;
	return "?";
}

/*
 * An error about two options: a needs b (which nothing set), or a and b exclude each other. It is
 * located at the configuration file's line of a (else of b) when the file set either:
 * "FILE:3: follow-children needs pid", "FILE:2: output and endpoint exclude each other (endpoint:
 * line 5)"; options given as flags keep their "--".
 */
static void report_pair(FILE *err, const struct options *opts, const unsigned *line, int a, int b, bool needs)
{
	unsigned at = line[a] ? line[a] : line[b];
	/* The missing option of "needs" is named the way a was given. */
	bool b_plain = needs ? line[a] : line[b];

	if (at)
		fprintf(err, "otelprofd: %s:%u: ", opts->config->name, at);
	else
		fprintf(err, "otelprofd: ");
	fprintf(err, "%s%s %s %s%s%s", line[a] ? "" : "--", option_name(a), needs ? "needs" : "and",
		b_plain ? "" : "--", option_name(b), needs ? "" : " exclude each other");
	if (line[a] && line[b] && line[a] != line[b])
		fprintf(err, " (%s: line %u)", option_name(b), line[b]);
	fputc('\n', err);
}

enum options_result options_parse(struct options *opts, int argc, char **argv, FILE *out, FILE *err)
{
	bool set[OPT_LAST] = { false }; /* options given as flags: the file does not override them */
	unsigned line[OPT_LAST] = { 0 }; /* the configuration file's line of the options it set */
	const char *config_path;
	char shown[128];
	int c;

	options_init(opts);
	optind = 0; /* GNU getopt: full reinitialisation, so parsing can run more than once */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":F:d:p:o:vqhV", long_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			options_print_help(out);
			return OPTIONS_EXIT;
		case 'V':
			fprintf(out, "otelprofd %s\n", OTELPROFD_VERSION);
			return OPTIONS_EXIT;
		case OPT_CONFIG:
			if (parse_has_control(optarg)) {
				fprintf(err, "otelprofd: --config: control characters are not allowed in the path\n");
				goto usage;
			}
			opts->config_path = optarg;
			break;
		case OPT_CHECK_CONFIG:
			opts->check_config = true;
			break;
		case ':':
			fprintf(err, "otelprofd: option '%s' needs a value\n", parse_escape(argv[optind - 1], shown, sizeof(shown)));
			goto usage;
		case '?':
			if (optopt)
				fprintf(err, "otelprofd: unknown option '-%s'\n",
					parse_escape((char[]){ (char)optopt, 0 }, shown, sizeof(shown)));
			else
				fprintf(err, "otelprofd: unknown option '%s'\n", parse_escape(argv[optind - 1], shown, sizeof(shown)));
			goto usage;
		default:
			if (apply_option(opts, c, optarg, err))
				goto usage;
			set[c] = true;
			break;
		}
	}
	/* Everything after "--" is a program to start and profile. */
	if (optind < argc && optind > 0 && !strcmp(argv[optind - 1], "--")) {
		opts->command = argv + optind;
	} else if (optind < argc) {
		fprintf(err, "otelprofd: unexpected argument '%s'\n", parse_escape(argv[optind], shown, sizeof(shown)));
		goto usage;
	}
	config_path = opts->config_path ? opts->config_path : opts->check_config ? OTELPROFD_DEFAULT_CONFIG : NULL;
	if (config_path && apply_config_file(opts, config_path, set, line, err))
		goto fail;
	if (opts->follow_children && !opts->npids) {
		report_pair(err, opts, line, OPT_FOLLOW_CHILDREN, 'p', true);
		goto usage;
	}
	if (opts->command && opts->npids) {
		fprintf(err, "otelprofd: -- PROGRAM and --pid exclude each other\n");
		goto usage;
	}
	if (opts->verbose && opts->quiet) {
		report_pair(err, opts, line, 'v', 'q', false);
		goto usage;
	}
	if (format_from_output(opts, err))
		goto usage;
	if (export_flags_apply_environment(opts, line, err))
		goto usage;
	if (opts->export.enabled && opts->format_set && !opts->output) {
		if (opts->export.endpoint) {
			report_pair(err, opts, line, OPT_FORMAT, OPT_ENDPOINT, false);
			goto usage;
		}
		opts->export.enabled = false;
	}
	if (opts->export.enabled && opts->output) {
		if (opts->export.endpoint) {
			report_pair(err, opts, line, 'o', OPT_ENDPOINT, false);
			goto usage;
		}
		/* An ad hoc run writing a file ignores a collector configured in the environment. */
		opts->export.enabled = false;
	}
	/* A program started runs until it exits, unless told a duration. */
	if (opts->command && !opts->duration_set)
		opts->duration_ns = 0;
	/* A collector makes otelprofd a daemon: it runs until SIGTERM unless told a duration. */
	if (opts->export.enabled && !opts->duration_set)
		opts->duration_ns = 0;
	/* An ad hoc look (one process, or under a minute) needs more samples than a host watched for hours. */
	if (opts->npids || opts->command || (opts->duration_ns && opts->duration_ns < OPTIONS_AD_HOC_NS)) {
		if (!set['F'] && !line['F'])
			opts->frequency = OPTIONS_AD_HOC_FREQUENCY;
		/* Its modules' source lines and inline frames are worth more memory for its few minutes. */
		if (!set[OPT_SYMBOL_CACHE] && !line[OPT_SYMBOL_CACHE])
			opts->symbol_cache = OPTIONS_AD_HOC_SYMBOL_CACHE;
		if (!set[OPT_MEMORY_LIMIT] && !line[OPT_MEMORY_LIMIT])
			opts->memory_limit = OPTIONS_AD_HOC_MEMORY_LIMIT;
	}
	/* Named processes' switches are few and cheap to take all, and a 5% sample of a few seconds of
	 * one thread is too noisy to read; a host watched as a service keeps its sampled default. */
	if (!set[OPT_OFF_CPU_PROBABILITY] && !line[OPT_OFF_CPU_PROBABILITY] && opts->npids)
		opts->off_cpu_probability = 1.0;
	if (opts->check_config) {
		fprintf(out, "otelprofd: %s: configuration is valid\n", config_path);
		options_free(opts);
		return OPTIONS_EXIT;
	}
	return OPTIONS_OK;

usage:
	fprintf(err, "Try 'otelprofd --help' for more information.\n");
fail:
	options_free(opts);
	return OPTIONS_USAGE;
}

void options_free(struct options *opts)
{
	if (!opts)
		return;
	free(opts->pids);
	export_config_free(&opts->export);
	config_file_free(opts->config);
	opts->config = NULL;
	opts->pids = NULL;
	opts->npids = 0;
}
