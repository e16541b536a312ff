// SPDX-License-Identifier: Apache-2.0
/* CPython frames: the symbolizer's side of python_cache.h (one cache, created at the first attach). */
#include "symbolizer_internal.h"

#include <errno.h>
#include <string.h>

int symbolizer_python_attach(struct symbolizer *s, pid_t pid, uint64_t instance, const struct python_layout *layout,
			     uint64_t code_type)
{
	if (!s->python)
		s->python = python_cache_new(&s->config.python);
	if (!s->python)
		return -ENOMEM;
	return python_cache_attach(s->python, pid, instance, layout, code_type);
}

bool symbolizer_python_attached(struct symbolizer *s, pid_t pid, uint64_t instance)
{
	return s->python && python_cache_attached(s->python, pid, instance);
}

int symbolizer_python_frame(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t code, uint64_t instr,
			    uint64_t *address)
{
	return s->python ? python_cache_frame_address(s->python, pid, instance, code, instr, address) : -ENOENT;
}

int symbolizer__python_lookup(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t address,
			      struct sym_frame *frame)
{
	const struct python_code *code;
	uint32_t line;

	memset(frame, 0, offsetof(struct sym_frame, lines));
	frame->kind = SYM_FRAME_CPYTHON;
	frame->module = "[python]"; /* no file address: the frame is not machine code */
	s->stats.lookups++;
	if (!s->python || python_cache_lookup(s->python, pid, instance, address, &code, &line))
		return -ENOENT;
	frame->lines[0] = (struct sym_line){
		.function = code->qualname, .system_name = code->qualname, .file = code->filename, .line = line,
	};
	frame->nlines = 1;
	s->stats.symbolized++;
	return 0;
}
