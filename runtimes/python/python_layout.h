/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where CPython keeps what a profiler reads: the thread states and frame chain (walked by the BPF
 * program) and the code objects (read by the symbolizer). One table per supported version (3.11,
 * 3.12, 3.13, as the interpreters built from CPython's own headers lay them out on 64-bit Linux),
 * and for 3.13 the interpreter's own _Py_DebugOffsets (at the start of _PyRuntime), preferred when
 * it checks out. Pure data: no I/O.
 */
#ifndef OTELPROF_PYTHON_LAYOUT_H
#define OTELPROF_PYTHON_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of _Py_DebugOffsets this reader uses (3.13: cookie, version, up to the code object's). */
#define PYTHON_DEBUG_OFFSETS_BYTES 352
/* A field the version does not have. */
#define PYTHON_NO_FIELD UINT32_MAX

struct python_layout {
	uint32_t version_hex;          /* PY_VERSION_HEX of the interpreter (Py_Version) */
	uint32_t runtime_interp_head;  /* _PyRuntimeState: interpreters.head */
	uint32_t interp_threads_head;  /* PyInterpreterState: threads.head */
	uint32_t tstate_next;          /* PyThreadState: next */
	uint32_t tstate_native_tid;    /* PyThreadState: native_thread_id */
	uint32_t tstate_frame;         /* PyThreadState: cframe (3.11, 3.12) or current_frame (3.13) */
	uint32_t cframe_frame;         /* _PyCFrame: current_frame, or PYTHON_NO_FIELD (3.13) */
	uint32_t frame_code;           /* _PyInterpreterFrame: f_code / f_executable */
	uint32_t frame_previous;       /* _PyInterpreterFrame: previous */
	uint32_t frame_instr;          /* _PyInterpreterFrame: prev_instr / instr_ptr */
	uint32_t frame_owner;          /* _PyInterpreterFrame: owner */
	uint32_t frame_is_entry;       /* _PyInterpreterFrame: is_entry (3.11), or PYTHON_NO_FIELD */
	uint32_t owner_cstack;         /* owner value of the C stack's shim frames, or PYTHON_NO_FIELD */
	uint32_t code_filename;        /* PyCodeObject: co_filename (str) */
	uint32_t code_name;            /* PyCodeObject: co_name (str) */
	uint32_t code_qualname;        /* PyCodeObject: co_qualname (str) */
	uint32_t code_linetable;       /* PyCodeObject: co_linetable (bytes, PEP 626 location table) */
	uint32_t code_firstlineno;     /* PyCodeObject: co_firstlineno (int) */
	uint32_t code_adaptive;        /* PyCodeObject: co_code_adaptive (the instructions) */
	uint32_t object_type;          /* PyObject: ob_type */
	uint32_t unicode_length;       /* PyASCIIObject: length (code points) */
	uint32_t unicode_state;        /* PyASCIIObject: state (kind bits 2-4, compact 5, ascii 6) */
	uint32_t unicode_ascii_data;   /* sizeof(PyASCIIObject): a compact ASCII string's characters */
	uint32_t unicode_compact_data; /* sizeof(PyCompactUnicodeObject): other compact strings' */
	uint32_t bytes_size;           /* PyVarObject: ob_size of a bytes object */
	uint32_t bytes_data;           /* PyBytesObject: ob_sval */
};

/* The table of version_hex's minor release (3.11, 3.12 or 3.13): 0, or -ENOTSUP. */
int python_layout_for_version(uint32_t version_hex, struct python_layout *out);

/*
 * Take the offsets a 3.13 interpreter publishes in _Py_DebugOffsets (the first
 * PYTHON_DEBUG_OFFSETS_BYTES bytes of _PyRuntime, as read from the process) over the table's:
 * 0, or -EINVAL when the cookie, the version or the sizes do not check out (the table stays), or
 * -ENOTSUP for a free-threaded build.
 */
int python_layout_apply_debug_offsets(struct python_layout *layout, const void *bytes, size_t n);

#endif
