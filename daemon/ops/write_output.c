#include "ops/write_output.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "output/otlp_encode.h"
#include "output/output_file.h"
#include "output/writers.h"

/* --off-cpu with folded output: the waits go to a second file, x.off-cpu.folded. */
static int write_output_off_cpu(const struct options *opts, const struct profile *p)
{
	char path[4096];
	int r;

	if (!p->off_cpu_enabled || !opts->output || !strcmp(opts->output, "-"))
		return 0;
	r = folded_off_cpu_path(opts->output, path, sizeof(path));
	if (!r)
		r = write_folded_off_cpu_file(p, path);
	if (!r)
		log_info("Wrote %" PRIu64 " off-CPU waits to %s", p->off_cpu_count, path);
	return r;
}

/* The profile in the chosen format to out (a file's stream or standard output). */
static int write_format(const struct options *opts, const struct profile *p, FILE *out)
{
	switch (opts->format) {
	case OUTPUT_OTLP:
		return otlp_write(p, &(struct otlp_encode_options){
			.resource_attrs = opts->export.resource_attrs, .nresource_attrs = opts->export.nresource_attrs,
		}, out);
	case OUTPUT_TOP:
		return write_top(p, opts->top, out);
	case OUTPUT_PPROF:
		return write_pprof(p, out);
	case OUTPUT_FOLDED:
		return write_folded(p, out);
	case OUTPUT_HTML:
		return write_html(p, out);
	}
	return -EINVAL;
}

int write_output(const struct options *opts, const struct profile *p)
{
	struct output_file *f;
	int r;

	/* No -o, or -o -: standard output, any format (a binary one too, for a pipe). */
	if (!opts->output || !strcmp(opts->output, "-")) {
		r = write_format(opts, p, stdout);
		return r ?: fflush(stdout) ? -errno : ferror(stdout) ? -EIO : 0;
	}
	f = output_file_open(opts->output);
	if (!f)
		return -errno;
	r = write_format(opts, p, output_file_stream(f));
	if (r) {
		output_file_abort(f);
		return r;
	}
	r = output_file_commit(f);
	return r ?: opts->format == OUTPUT_FOLDED ? write_output_off_cpu(opts, p) : 0;
}
