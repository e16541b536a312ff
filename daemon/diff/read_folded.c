// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff/readers.h"

/* Suffixes folded tools give frame types (FlameGraph's stackcollapse scripts, ours for the kernel). */
static const struct {
	const char *suffix, *type;
} type_suffixes[] = { { "_[k]", "kernel" }, { "_[i]", "inlined" }, { "_[j]", "jit" } };

/* The frame of name[0..len) (the first of a stack is its process). */
static int64_t folded_frame(struct flame *f, char *name, size_t len, bool process)
{
	const char *type = process ? "process" : "native";

	for (size_t i = 0; !process && i < sizeof(type_suffixes) / sizeof(type_suffixes[0]); i++) {
		size_t n = strlen(type_suffixes[i].suffix);

		if (len > n && !memcmp(name + len - n, type_suffixes[i].suffix, n)) {
			len -= n;
			type = type_suffixes[i].type;
			break;
		}
	}
	name[len] = 0;
	return flame_frame(f, &(struct flame_frame_desc){ .name = len ? name : "[unknown]", .type = type });
}

/* One line: frames ';'-separated, a space, the count. The line is changed in place. */
static int folded_line(char *line, size_t len, const struct read_target *t, uint32_t *frames,
		       struct read_info *info, const char **why)
{
	char *space = memrchr(line, ' ', len), *end, *name;
	unsigned long long count;
	size_t n = 0;

	if (!space || space == line) {
		*why = "no count after the stack (expected 'frame;frame;... COUNT')";
		return -EINVAL;
	}
	errno = 0;
	count = strtoull(space + 1, &end, 10);
	if (space[1] < '0' || space[1] > '9' || errno || end != line + len) {
		*why = "the count is not a number";
		return -EINVAL;
	}
	*space = 0;
	for (name = line; name; n++) {
		char *semi = strchr(name, ';');
		size_t nlen = semi ? (size_t)(semi - name) : strlen(name);
		int64_t id;

		if (n == READ_MAX_FRAMES) {
			*why = "more than 8192 frames in the stack";
			return -EINVAL;
		}
		id = folded_frame(t->flame, name, nlen, n == 0);
		if (id < 0) {
			*why = "too many distinct frames";
			return (int)id;
		}
		frames[n] = (uint32_t)id;
		name = semi ? semi + 1 : NULL;
	}
	if (count && flame_add_stack(t->flame, t->view, frames, n, t->slot, count) == -ENOMEM) {
		*why = "out of memory";
		return -ENOMEM;
	}
	info->total += count;
	info->stacks++;
	return 0;
}

int read_folded(const char *data, size_t len, const struct read_target *t, struct read_info *info, char *err,
		size_t errlen)
{
	uint32_t *frames = malloc(READ_MAX_FRAMES * sizeof(*frames));
	char *line = malloc(READ_MAX_LINE + 1);
	size_t lineno = 0;
	int r = 0;

	memset(info, 0, sizeof(*info));
	snprintf(info->sample_type, sizeof(info->sample_type), "samples/count");
	if (!frames || !line) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (memchr(data, 0, len)) {
		r = -EINVAL;
		snprintf(err, errlen, "not a profile: binary data that is neither gzip nor folded stacks");
		goto out;
	}
	for (size_t pos = 0; pos < len && !r;) {
		const char *nl = memchr(data + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (data + pos)) : len - pos;
		const char *why = NULL;

		lineno++;
		if (n > READ_MAX_LINE) {
			r = -EINVAL;
			snprintf(err, errlen, "line %zu: longer than %u bytes", lineno, READ_MAX_LINE);
			break;
		}
		memcpy(line, data + pos, n);
		pos += n + 1;
		if (n && line[n - 1] == '\r')
			n--;
		line[n] = 0;
		if (!n || line[0] == '#')
			continue;
		r = folded_line(line, n, t, frames, info, &why);
		if (r)
			snprintf(err, errlen, "line %zu: %s", lineno, why);
	}
	if (!r && !info->total) {
		r = -EINVAL;
		snprintf(err, errlen, "empty profile: no stack has a count");
	}
out:
	free(frames);
	free(line);
	return r;
}
