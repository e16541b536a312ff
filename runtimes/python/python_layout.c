// SPDX-License-Identifier: Apache-2.0
#include "python_layout.h"

#include <errno.h>
#include <string.h>

/* The parts every supported version shares: the code object's header and the str and bytes objects. */
#define COMMON_OBJECTS                                                                              \
	.code_filename = 112, .code_name = 120, .code_qualname = 128, .code_linetable = 136,          \
	.object_type = 8, .unicode_length = 16, .unicode_state = 32, .bytes_size = 16, .bytes_data = 32

/* Read from the 3.11.2, 3.12.1 and 3.13.0 headers (offsetof on x86-64; the same on every 64-bit
 * Linux build of those releases, debug builds aside). */
static const struct python_layout layouts[] = {
	{
		.version_hex = 0x030b0000, .runtime_interp_head = 40, .interp_threads_head = 16,
		.tstate_next = 8, .tstate_native_tid = 160, .tstate_frame = 56, .cframe_frame = 8,
		.frame_code = 32, .frame_previous = 48, .frame_instr = 56, .frame_owner = 69,
		.frame_is_entry = 68, .owner_cstack = PYTHON_NO_FIELD, .code_firstlineno = 72,
		.code_adaptive = 184, .unicode_ascii_data = 48, .unicode_compact_data = 72, COMMON_OBJECTS,
	},
	{
		.version_hex = 0x030c0000, .runtime_interp_head = 40, .interp_threads_head = 72,
		.tstate_next = 8, .tstate_native_tid = 144, .tstate_frame = 56, .cframe_frame = 0,
		.frame_code = 0, .frame_previous = 8, .frame_instr = 56, .frame_owner = 70,
		.frame_is_entry = PYTHON_NO_FIELD, .owner_cstack = 3, .code_firstlineno = 68,
		.code_adaptive = 192, .unicode_ascii_data = 40, .unicode_compact_data = 56, COMMON_OBJECTS,
	},
	{
		.version_hex = 0x030d0000, .runtime_interp_head = 632, .interp_threads_head = 7344,
		.tstate_next = 8, .tstate_native_tid = 160, .tstate_frame = 72, .cframe_frame = PYTHON_NO_FIELD,
		.frame_code = 0, .frame_previous = 8, .frame_instr = 56, .frame_owner = 70,
		.frame_is_entry = PYTHON_NO_FIELD, .owner_cstack = 3, .code_firstlineno = 68,
		.code_adaptive = 200, .unicode_ascii_data = 40, .unicode_compact_data = 56, COMMON_OBJECTS,
	},
};

int python_layout_for_version(uint32_t version_hex, struct python_layout *out)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		if ((version_hex >> 16) == (layouts[i].version_hex >> 16)) {
			*out = layouts[i];
			out->version_hex = version_hex;
			return 0;
		}
	}
	return -ENOTSUP;
}

/* Word i of the debug offsets (each field is a uint64_t). */
static uint64_t word(const unsigned char *bytes, size_t i)
{
	uint64_t v;

	memcpy(&v, bytes + 8 * i, sizeof(v));
	return v;
}

/* 3.13's _Py_DebugOffsets, in words: cookie 0, version 1, free_threaded 2, runtime_state 3-5,
 * interpreter_state 6-18, thread_state 19-27, interpreter_frame 28-33, code_object 34-43. */
enum {
	DO_VERSION = 1, DO_FREE_THREADED = 2, DO_RUNTIME_SIZE = 3, DO_INTERPRETERS_HEAD = 5,
	DO_INTERP_SIZE = 6, DO_THREADS_HEAD = 9, DO_TSTATE_SIZE = 19, DO_TSTATE_NEXT = 21,
	DO_TSTATE_FRAME = 23, DO_TSTATE_NATIVE_TID = 25, DO_FRAME_SIZE = 28, DO_FRAME_PREVIOUS = 29,
	DO_FRAME_EXECUTABLE = 30, DO_FRAME_INSTR = 31, DO_FRAME_OWNER = 33, DO_CODE_SIZE = 34,
	DO_CODE_FILENAME = 35, DO_CODE_NAME = 36, DO_CODE_QUALNAME = 37, DO_CODE_LINETABLE = 38,
	DO_CODE_FIRSTLINENO = 39, DO_CODE_ADAPTIVE = 43,
};

int python_layout_apply_debug_offsets(struct python_layout *layout, const void *bytes, size_t n)
{
	const unsigned char *b = bytes;
	struct python_layout l = *layout;
	/* Each field must lie inside its struct's size, and the sizes stay sane. */
	static const struct { unsigned field, size; } checks[] = {
		{ DO_INTERPRETERS_HEAD, DO_RUNTIME_SIZE }, { DO_THREADS_HEAD, DO_INTERP_SIZE },
		{ DO_TSTATE_NEXT, DO_TSTATE_SIZE }, { DO_TSTATE_FRAME, DO_TSTATE_SIZE },
		{ DO_TSTATE_NATIVE_TID, DO_TSTATE_SIZE }, { DO_FRAME_PREVIOUS, DO_FRAME_SIZE },
		{ DO_FRAME_EXECUTABLE, DO_FRAME_SIZE }, { DO_FRAME_INSTR, DO_FRAME_SIZE },
		{ DO_FRAME_OWNER, DO_FRAME_SIZE }, { DO_CODE_FILENAME, DO_CODE_SIZE },
		{ DO_CODE_NAME, DO_CODE_SIZE }, { DO_CODE_QUALNAME, DO_CODE_SIZE },
		{ DO_CODE_LINETABLE, DO_CODE_SIZE }, { DO_CODE_FIRSTLINENO, DO_CODE_SIZE },
		{ DO_CODE_ADAPTIVE, DO_CODE_SIZE },
	};

	if (n < PYTHON_DEBUG_OFFSETS_BYTES || memcmp(b, "xdebugpy", 8) ||
	    (word(b, DO_VERSION) >> 16) != (layout->version_hex >> 16) || (layout->version_hex >> 16) != 0x030d)
		return -EINVAL;
	if (word(b, DO_FREE_THREADED))
		return -ENOTSUP;
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		if (word(b, checks[i].size) > (1u << 20) || word(b, checks[i].field) >= word(b, checks[i].size))
			return -EINVAL;
	/* The BPF program reads the frame's fields from its first 72 bytes. */
	if (word(b, DO_FRAME_PREVIOUS) > 64 || word(b, DO_FRAME_EXECUTABLE) > 64 || word(b, DO_FRAME_INSTR) > 64 ||
	    word(b, DO_FRAME_OWNER) >= 72 || word(b, DO_TSTATE_NEXT) > 0xfff0 || word(b, DO_TSTATE_FRAME) > 0xfff0 ||
	    word(b, DO_TSTATE_NATIVE_TID) > 0xfff0 || word(b, DO_THREADS_HEAD) > 0xfff0)
		return -EINVAL;
	l.runtime_interp_head = (uint32_t)word(b, DO_INTERPRETERS_HEAD);
	l.interp_threads_head = (uint32_t)word(b, DO_THREADS_HEAD);
	l.tstate_next = (uint32_t)word(b, DO_TSTATE_NEXT);
	l.tstate_frame = (uint32_t)word(b, DO_TSTATE_FRAME);
	l.tstate_native_tid = (uint32_t)word(b, DO_TSTATE_NATIVE_TID);
	l.cframe_frame = PYTHON_NO_FIELD;
	l.frame_previous = (uint32_t)word(b, DO_FRAME_PREVIOUS);
	l.frame_code = (uint32_t)word(b, DO_FRAME_EXECUTABLE);
	l.frame_instr = (uint32_t)word(b, DO_FRAME_INSTR);
	l.frame_owner = (uint32_t)word(b, DO_FRAME_OWNER);
	l.code_filename = (uint32_t)word(b, DO_CODE_FILENAME);
	l.code_name = (uint32_t)word(b, DO_CODE_NAME);
	l.code_qualname = (uint32_t)word(b, DO_CODE_QUALNAME);
	l.code_linetable = (uint32_t)word(b, DO_CODE_LINETABLE);
	l.code_firstlineno = (uint32_t)word(b, DO_CODE_FIRSTLINENO);
	l.code_adaptive = (uint32_t)word(b, DO_CODE_ADAPTIVE);
	*layout = l;
	return 0;
}
