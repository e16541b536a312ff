// SPDX-License-Identifier: Apache-2.0
#include "ops/write_output.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "output/otlp_encode.h"
#include "output/output_file.h"
#include "output/writers.h"

/* --off-cpu with folded output: the waits go to a second file, x.off-cpu.folded. */
static int write_output_off_cpu(const struct profile *p, const char *output)
{
	char path[4096];
	int r;

	if (!p->off_cpu_enabled || !strcmp(output, "-"))
		return 0;
	r = folded_off_cpu_path(output, path, sizeof(path));
	if (!r)
		r = write_folded_off_cpu_file(p, path);
	if (!r)
		log_info("Wrote %" PRIu64 " off-CPU %s to %s", p->off_cpu_count, plural(p->off_cpu_count, "wait", "waits"),
			 path);
	return r;
}

/* --alloc with folded output: the bytes allocated and in use go to x.alloc_space.folded and
 * x.inuse_space.folded. */
static int write_output_heap(const struct profile *p, const char *output)
{
	static const enum pf_view views[] = { PF_VIEW_ALLOC_SPACE, PF_VIEW_INUSE_SPACE };
	char path[4096];
	int r = 0;

	if (!p->alloc_enabled || !strcmp(output, "-"))
		return 0;
	for (size_t i = 0; !r && i < sizeof(views) / sizeof(views[0]); i++) {
		r = folded_view_path(output, views[i], path, sizeof(path));
		if (!r)
			r = write_folded_view_file(p, views[i], path);
		if (!r)
			log_info("Wrote %.1f MiB %s to %s", (views[i] == PF_VIEW_ALLOC_SPACE ? p->alloc_bytes : p->inuse_bytes) /
				 1048576.0, views[i] == PF_VIEW_ALLOC_SPACE ? "allocated" : "in use", path);
	}
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

/* The profile to path: a file (written whole or not at all), or standard output for NULL or "-" (any
 * format, a binary one too, for a pipe). */
static int write_output_to(const struct options *opts, const struct profile *p, const char *path)
{
	struct output_file *f;
	int r;

	if (!path || !strcmp(path, "-")) {
		r = write_format(opts, p, stdout);
		return r ?: fflush(stdout) ? -errno : ferror(stdout) ? -EIO : 0;
	}
	f = output_file_open(path);
	if (!f)
		return -errno;
	r = write_format(opts, p, output_file_stream(f));
	if (r) {
		output_file_abort(f);
		return r;
	}
	r = output_file_commit(f);
	if (r || opts->format != OUTPUT_FOLDED)
		return r;
	return write_output_off_cpu(p, path) ?: write_output_heap(p, path);
}

static bool writes_file(const struct options *opts)
{
	return opts->output && strcmp(opts->output, "-");
}

/* The profile whose own path failed at the end (a full disk, its directory removed meanwhile): into a
 * new file of $TMPDIR, else /var/tmp, else /tmp, whose path is said. 0 when one took it. */
static int write_fallback(const struct options *opts, const struct profile *p)
{
	const char *dirs[] = { getenv("TMPDIR"), "/var/tmp", "/tmp" };
	char path[4096];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		int r;

		if (!dirs[i] || dirs[i][0] != '/' || output_file_fallback(dirs[i], opts->output, path, sizeof(path)))
			continue;
		r = write_output_to(opts, p, path);
		if (!r) {
			log_error("The profile (%" PRIu64 " %s) is in %s instead", p->total_count,
				  plural(p->total_count, "sample", "samples"), path);
			return 0;
		}
		remove(path);
		log_warn("Failed to write the profile to %s too: %s", path, strerror(-r));
	}
	return -EIO;
}

int write_output(const struct options *opts, const struct profile *p)
{
	int r = write_output_to(opts, p, opts->output);

	if (!r) {
		if (writes_file(opts))
			log_info("Wrote %" PRIu64 " %s to %s", p->total_count, plural(p->total_count, "sample", "samples"),
				 opts->output);
		return 0;
	}
	log_error("Failed to write %s: %s", writes_file(opts) ? opts->output : "the table", strerror(-r));
	if (writes_file(opts))
		write_fallback(opts, p);
	return r;
}

int write_output_check(const struct options *opts)
{
	int r;

	if (!writes_file(opts))
		return 0;
	r = output_file_check(opts->output);
	if (r == -EISDIR)
		log_error("Cannot write %s: it is a directory (give a file name)", opts->output);
	else if (r == -ENOENT)
		log_error("Cannot write %s: its directory does not exist", opts->output);
	else if (r)
		log_error("Cannot write %s: %s", opts->output, strerror(-r));
	return r;
}
