/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether a process runs CPython, and where: the interpreter's ELF file (the python executable or
 * a libpython shared library, found by name in /proc/PID/maps and opened through
 * /proc/PID/map_files), its exported symbols _PyRuntime, Py_Version, PyCode_Type and
 * _PyEval_EvalFrameDefault, and the layout of its version (runtimes/python/python_layout.h; for 3.13 the
 * interpreter's _Py_DebugOffsets, read from _PyRuntime). Bounded: at most PYTHON_PROCESS_MAX_FILES
 * candidate files, symbol tables of at most PYTHON_PROCESS_MAX_SYMBOLS entries. Nothing kept open.
 */
#ifndef OTELPROFD_PYTHON_PROCESS_H
#define OTELPROFD_PYTHON_PROCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "python_layout.h"
#include "records.h"

#define PYTHON_PROCESS_MAX_FILES 8
#define PYTHON_PROCESS_MAX_SYMBOLS (1u << 20)

struct python_process {
	struct python_layout layout;
	uint64_t runtime;            /* address of _PyRuntime */
	uint64_t code_type;          /* address of PyCode_Type (0: not exported) */
	uint64_t eval_start, eval_end; /* _PyEval_EvalFrameDefault's code in the process */
	uint32_t version_hex;        /* Py_Version */
	bool debug_offsets;          /* the layout came from the interpreter's _Py_DebugOffsets */
};

/*
 * Find the interpreter of pid: 0 and *out, -ENOENT (no CPython there, or not yet initialized: no
 * Py_Version value), -ENOTSUP (a version this reader does not know: out->version_hex says which),
 * or the -errno of reading /proc or the memory.
 */
int python_process_find(const char *proc_root, uint32_t pid, struct python_process *out);
/* Whether a mapped file's path names an interpreter (python*, libpython*): only those are tried. */
bool python_process_interpreter_name(const char *path);

/* The BPF program's entry for the process (python part of struct otelprof_trace_proc). */
void python_process_bpf_entry(const struct python_process *p, struct otelprof_python_proc *out);

#endif
