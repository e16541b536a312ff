#include "ops/write_output.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "output/otlp_encode.h"
#include "output/writers.h"

/* --off-cpu with folded output: the waits go to a second file, x.off-cpu.folded. */
static int write_output_off_cpu(const struct options *opts, const struct profile *p)
{
	char path[4096];
	int r;

	if (!p->off_cpu_enabled || !strcmp(opts->output, "-"))
		return 0;
	r = folded_off_cpu_path(opts->output, path, sizeof(path));
	if (!r)
		r = write_folded_off_cpu_file(p, path);
	if (!r)
		log_info("Wrote %" PRIu64 " off-CPU %s to %s", p->off_cpu_count, plural(p->off_cpu_count, "wait", "waits"),
			 path);
	return r;
}

int write_output(const struct options *opts, const struct profile *p)
{
	switch (opts->format) {
	case OUTPUT_OTLP:
		return otlp_write_file(p, &(struct otlp_encode_options){
			.resource_attrs = opts->export.resource_attrs, .nresource_attrs = opts->export.nresource_attrs,
		}, opts->output);
	case OUTPUT_TOP:
		return write_top(p, opts->top, stdout);
	case OUTPUT_PPROF:
		return write_pprof_file(p, opts->output);
	case OUTPUT_FOLDED:
		return write_folded_file(p, opts->output) ?: write_output_off_cpu(opts, p);
	}
	return -EINVAL;
}
