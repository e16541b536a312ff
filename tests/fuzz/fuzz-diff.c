// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target over the profiles `otelprofd diff` reads: the first byte picks the reader (even:
 * pprof, gzipped or not; odd: folded stacks), the rest is the file. Each input is read into a fresh
 * flame view, which is then walked as the diff's outputs walk it.
 */
#include <stddef.h>
#include <stdint.h>

#include "diff/readers.h"

static int visit(void *ctx, const uint32_t *frames, size_t n, const uint64_t self[2])
{
	const struct flame *f = ctx;

	for (size_t i = 0; i < n; i++)
		if (!flame_frame_name(f, frames[i]) || !flame_frame_type(f, frames[i]))
			__builtin_trap();
	return self[0] || self[1] ? 0 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct flame *f;
	struct read_info info;
	char err[256];
	int view, r;

	if (!len)
		return 0;
	f = flame_new(1 << 16);
	if (!f)
		return 0;
	view = flame_add_view(f, "fuzz", "samples", true);
	if (view >= 0) {
		struct read_target t = { f, view, data[0] & 2 ? 1 : 0 };

		if (data[0] & 1)
			r = read_folded((const char *)data + 1, len - 1, &t, &info, err, sizeof(err));
		else
			r = read_pprof(data + 1, len - 1, &t, &info, err, sizeof(err));
		if (r && !err[0])
			__builtin_trap(); /* every refusal says why */
		flame_each_stack(f, view, visit, f);
	}
	flame_free(f);
	return 0;
}
