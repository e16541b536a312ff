/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Python frames into a sample's user stack (docs/python.md): a sample of a CPython process carries
 * its thread's interpreter frames (the BPF program's Python tail: frames, innermost first, and an
 * entry marker at each boundary of the interpreter's C calls). Each native frame in
 * _PyEval_EvalFrameDefault, from the leaf outward, is replaced by the Python frames that ran in that
 * call (the frames up to the next marker), as frame addresses the symbolizer names
 * (python_cache.h); native frames between them (C extensions, the interpreter's C functions) stay.
 * Python frames left over when the native stack has no more interpreter frames (it was cut) go at
 * its root end. The stack keeps at most OTELPROF_MAX_STACK_DEPTH frames (cut at the root, marked
 * truncated).
 */
#ifndef OTELPROFD_PYTHON_SAMPLE_H
#define OTELPROFD_PYTHON_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "python_table.h"
#include "records.h"
#include "symbolizer.h"

struct python_sample_counters {
	uint64_t samples;        /* samples with Python frames */
	uint64_t frames;         /* Python frames put in stacks */
	uint64_t frames_bad;     /* Python frames left out: their code object was unreadable or bad */
	uint64_t unmatched;      /* samples whose native stack had no interpreter frame: the Python
				    frames went at the root end */
	uint64_t no_process;     /* samples with a Python tail of a process not in the table */
	uint64_t malformed;      /* Python tails whose size did not fit the record */
	uint64_t truncated;      /* stacks cut at OTELPROF_MAX_STACK_DEPTH frames */
};

/* The Python tail of a record as the ring buffer gave it (size bytes), or NULL (none, or malformed:
 * counted); *n is its slot count. */
const struct otelprof_python_frame *python_sample_tail(const void *record, size_t size, unsigned *n,
						     struct python_sample_counters *counters);

/*
 * s (the sample, its user stack maybe unwound already) with the Python frames of record put in:
 * out (not s), filled, or s itself when there is nothing to put.
 */
const struct otelprof_sample *python_sample(const struct python_table *t, struct symbolizer *sym, uint64_t instance,
					    const struct otelprof_sample *s, const void *record, size_t size,
					    struct otelprof_sample *out, struct python_sample_counters *counters);

#endif
