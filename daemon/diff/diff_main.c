// SPDX-License-Identifier: Apache-2.0
#include "diff/diff.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "diff/diff_report.h"
#include "diff/readers.h"
#include "output/html_page.h"
#include "output/output_file.h"
#include "parse.h"
#include "parse_units.h"

enum diff_format { DIFF_TOP, DIFF_FOLDED, DIFF_HTML };

struct diff_options {
	const char *base, *new, *output;
	enum diff_format format;
	bool format_set;
	unsigned top;
	const char *sample_type; /* --sample-type: pprof's type to compare; NULL: the first */
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: otelprofd diff BASE NEW [-o FILE] [--format=FORMAT] [--top=N] [--sample-type=TYPE]\n"
		"Compare two profiles: BASE and NEW are otelprofd's pprof files (.pb.gz) or folded stacks.\n"
		"Shares are of each profile's own total, so runs of different lengths compare.\n"
		"\n"
		"  -o, --output=FILE   FILE.html: differential flame graph (red grew, blue shrank);\n"
		"                      FILE.folded: 'stack BASE NEW' lines; '-': standard output (default)\n"
		"      --format=FORMAT top (default), folded or html, whatever the file name\n"
		"      --top=N         rows of the table of changes (default 20)\n"
		"      --sample-type=TYPE  the pprof sample type compared: samples (default, the first),\n"
		"                      off_cpu, alloc_space, alloc_objects, inuse_space, inuse_objects\n"
		"  -h, --help          show this help and exit\n"
		"\n"
		"Exit status: 0 on success, 1 when the output cannot be written, 2 on bad or mismatched input.\n");
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n > m && !strcmp(s + n - m, suffix);
}

static int parse_format(const char *name, enum diff_format *format)
{
	if (!strcmp(name, "top"))
		*format = DIFF_TOP;
	else if (!strcmp(name, "folded"))
		*format = DIFF_FOLDED;
	else if (!strcmp(name, "html"))
		*format = DIFF_HTML;
	else
		return -EINVAL;
	return 0;
}

/* 0 to run, 1 after --help, 2 on a usage error (said on stderr). */
static int parse_args(struct diff_options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' }, { "format", required_argument, NULL, 'f' },
		{ "top", required_argument, NULL, 't' }, { "help", no_argument, NULL, 'h' },
		{ "sample-type", required_argument, NULL, 's' }, { 0 },
	};
	char shown[128];
	unsigned long long v;
	int c;

	*o = (struct diff_options){ .top = 20 };
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case 'f':
			if (parse_format(optarg, &o->format)) {
				fprintf(stderr, "otelprofd diff: --format: '%s' is not top, folded or html\n",
					parse_escape(optarg, shown, sizeof(shown)));
				return 2;
			}
			o->format_set = true;
			break;
		case 't':
			if (parse_uint(optarg, 1, 100000, &v)) {
				fprintf(stderr, "otelprofd diff: --top: '%s' is not a number from 1 to 100000\n",
					parse_escape(optarg, shown, sizeof(shown)));
				return 2;
			}
			o->top = (unsigned)v;
			break;
		case 's':
			if (parse_has_control(optarg)) {
				fprintf(stderr, "otelprofd diff: --sample-type: control characters are not allowed\n");
				return 2;
			}
			o->sample_type = optarg;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case ':':
			fprintf(stderr, "otelprofd diff: option '%s' needs a value\n",
				parse_escape(argv[optind - 1], shown, sizeof(shown)));
			return 2;
		default:
			fprintf(stderr, "otelprofd diff: unknown option '%s'\n",
				parse_escape(argv[optind - 1], shown, sizeof(shown)));
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "otelprofd diff: expected two profiles, BASE and NEW (try 'otelprofd diff --help')\n");
		return 2;
	}
	o->base = argv[optind];
	o->new = argv[optind + 1];
	if (o->format_set || !o->output || !strcmp(o->output, "-"))
		return 0;
	if (has_suffix(o->output, ".html") || has_suffix(o->output, ".htm"))
		o->format = DIFF_HTML;
	else if (has_suffix(o->output, ".folded"))
		o->format = DIFF_FOLDED;
	else if (has_suffix(o->output, ".txt"))
		o->format = DIFF_TOP;
	else {
		fprintf(stderr, "otelprofd diff: --output: cannot tell the format of '%s' (use FILE.html, FILE.folded, "
			"FILE.txt or -, or --format)\n", parse_escape(o->output, shown, sizeof(shown)));
		return 2;
	}
	return 0;
}

static int write_format(const struct diff_options *o, const struct flame *f, int view, FILE *out)
{
	switch (o->format) {
	case DIFF_FOLDED:
		return diff_write_folded(f, view, out);
	case DIFF_HTML:
		return html_page_write(f, out);
	default:
		return diff_write_top(f, view, o->top, out);
	}
}

static int write_result(const struct diff_options *o, const struct flame *f, int view)
{
	struct output_file *file;
	int r;

	if (!o->output || !strcmp(o->output, "-"))
		return write_format(o, f, view, stdout);
	file = output_file_open(o->output);
	if (!file)
		return -errno;
	r = write_format(o, f, view, output_file_stream(file));
	if (r) {
		output_file_abort(file);
		return r;
	}
	return output_file_commit(file);
}

/* Both profiles into the view's two slots; the exit status 2 after a one-line error, or 0. */
static int read_both(const struct diff_options *o, struct flame *f, int view, struct read_info info[2])
{
	const char *paths[2] = { o->base, o->new };
	char err[512], shown[2][256];

	for (unsigned slot = 0; slot < 2; slot++) {
		int r = read_profile_file(paths[slot], &(struct read_target){ f, view, slot, o->sample_type }, &info[slot],
					  err, sizeof(err));

		if (r) {
			fprintf(stderr, "otelprofd diff: %s: %s\n", parse_escape(paths[slot], shown[0], sizeof(shown[0])),
				err);
			return 2;
		}
	}
	if (strcmp(info[0].sample_type, info[1].sample_type)) {
		fprintf(stderr, "otelprofd diff: %s and %s measure different things (%s, %s)\n",
			parse_escape(paths[0], shown[0], sizeof(shown[0])), parse_escape(paths[1], shown[1], sizeof(shown[1])),
			info[0].sample_type, info[1].sample_type);
		return 2;
	}
	return 0;
}

int diff_main(int argc, char **argv)
{
	struct diff_options o;
	struct read_info info[2];
	struct flame *f = NULL;
	char subtitle[1024], shown[2][256];
	int status = parse_args(&o, argc, argv), view, r;

	if (status)
		return status == 1 ? 0 : 2;
	f = flame_new(0);
	view = f ? flame_add_view(f, "Diff", "samples", true) : -ENOMEM;
	if (view < 0) {
		fprintf(stderr, "otelprofd diff: out of memory\n");
		flame_free(f);
		return 1;
	}
	status = read_both(&o, f, view, info);
	if (status)
		goto out;
	snprintf(subtitle, sizeof(subtitle), "base %s: %" PRIu64 " %s; new %s: %" PRIu64 " %s. Red grew, blue shrank "
		 "(share of each total); widths are the mean of both shares.",
		 parse_escape(o.base, shown[0], sizeof(shown[0])), info[0].total, info[0].sample_type,
		 parse_escape(o.new, shown[1], sizeof(shown[1])), info[1].total, info[1].sample_type);
	flame_set_title(f, "otelprofd diff", subtitle);
	if (flame_dropped(f))
		fprintf(stderr, "otelprofd diff: %" PRIu64 " stacks left out past the bound of %u nodes\n", flame_dropped(f),
			FLAME_DEFAULT_MAX_NODES);
	r = write_result(&o, f, view);
	if (r) {
		fprintf(stderr, "otelprofd diff: failed to write %s: %s\n",
			o.output ? parse_escape(o.output, shown[0], sizeof(shown[0])) : "standard output", strerror(-r));
		status = 1;
	}
out:
	flame_free(f);
	return status;
}
