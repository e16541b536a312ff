/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon/diff/: `otelprofd diff BASE NEW`, two profiles compared. The readers of the profiles it takes
 * (our gzipped pprof, folded stacks), the table and files it writes, and its command line. May include
 * output/, profile/ and the top-level helpers; main.c calls diff_main() only.
 */
/*
 * Readers of the profiles `otelprofd diff` compares: stacks added to one slot of a flame view
 * (output/flame_tree.h), the process first as in every otelprofd output. Input is untrusted: sizes
 * are bounded, every index is checked, and a bad file gives a one-line reason in err, never a crash.
 */
#ifndef OTELPROFD_DIFF_READERS_H
#define OTELPROFD_DIFF_READERS_H

#include <stddef.h>
#include <stdint.h>

#include "output/flame_tree.h"

/* Bounds: a file read whole, a gzip stream inflated, a folded line, frames in one stack. */
#define READ_MAX_FILE (256u << 20)
#define READ_MAX_INFLATED (1u << 30)
#define READ_MAX_LINE (1u << 20)
#define READ_MAX_FRAMES 8192

struct read_info {
	char sample_type[64]; /* "samples/count" for folded stacks; pprof's type/unit read */
	uint64_t total;       /* sum of what was added */
	uint64_t stacks;      /* stacks added */
};

/* Where the stacks go: view and slot of a flame. */
struct read_target {
	struct flame *flame;
	int view;
	unsigned slot;
	const char *sample_type; /* pprof: the sample type to read ("inuse_space"); NULL: the first */
};

/* Folded stacks, "process;root;...;leaf count" a line ("_[k]" marks kernel frames). 0, or -EINVAL
 * (-ENOMEM, -ENOSPC) with the reason in err ("line 3: no count"). */
int read_folded(const char *data, size_t len, const struct read_target *t, struct read_info *info, char *err,
		size_t errlen);
/* A pprof Profile, gzipped (as otelprofd writes them) or not. Same returns. */
int read_pprof(const uint8_t *data, size_t len, const struct read_target *t, struct read_info *info, char *err,
	       size_t errlen);
/* A file of either kind (gzip or a protobuf is pprof, text folded). Same returns, err prefixed with
 * nothing: the caller names the file. */
int read_profile_file(const char *path, const struct read_target *t, struct read_info *info, char *err,
		      size_t errlen);

#endif
