// SPDX-License-Identifier: Apache-2.0
#include "perf_map.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "jvm_names.h"

/* Longest line looked at: "START SIZE " and a name of PERF_MAP_MAX_NAME; the rest is skipped. */
#define LINE_MAX_BYTES (PERF_MAP_MAX_NAME + 64)

struct perf_map {
	struct perf_map_sym *syms;
	size_t count;
	size_t malformed;
	char *names;      /* every name read, NUL-terminated, back to back: one allocation */
	size_t names_size;
};

struct entry {
	uint64_t start, size;
	size_t name;  /* offset in the names pool (it moves while it grows) */
	size_t order; /* line number: later lines replace earlier ones (recompiled code) */
};

static int by_start(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* One line into line, cut to cap - 1 bytes (the rest is skipped, not stored). False at the end of f
 * or once *total passes max: a line without end is never read past the bound. */
static bool read_line(FILE *f, char *line, size_t cap, uint64_t *total, uint64_t max)
{
	size_t n = 0;
	bool any = false;
	int c;

	while (*total <= max && (c = getc_unlocked(f)) != EOF) {
		any = true;
		if (++*total > max || c == '\n')
			break;
		if (n + 1 < cap)
			line[n++] = (char)c;
	}
	line[n] = 0;
	return any && *total <= max;
}

/* "START SIZE NAME": false for a malformed line. *name points into line. */
static bool parse_line(char *line, uint64_t *start, uint64_t *size, char **name)
{
	char *end;

	*start = strtoull(line, &end, 16);
	if (end == line || *end != ' ')
		return false;
	line = end + 1;
	*size = strtoull(line, &end, 16);
	if (end == line || *end != ' ' || *size == 0 || *start + *size < *start)
		return false;
	*name = end + 1;
	if (strlen(*name) > PERF_MAP_MAX_NAME)
		(*name)[PERF_MAP_MAX_NAME] = 0;
	jvm_names_method(*name); /* HotSpot's "long Hot.mix(long)": Hot.mix */
	return **name != 0;
}

static bool grow(void **p, size_t *cap, size_t need, size_t unit)
{
	size_t ncap = *cap ? *cap : 256;
	void *np;

	if (need <= *cap)
		return true;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * unit);
	if (!np)
		return false;
	*p = np;
	*cap = ncap;
	return true;
}

struct perf_map *perf_map_parse(FILE *f, uint64_t max_bytes)
{
	struct perf_map *m = calloc(1, sizeof(*m));
	struct entry *entries = NULL;
	size_t n = 0, cap = 0, names_cap = 0;
	uint64_t total = 0;
	int err = ENOMEM;
	char line[LINE_MAX_BYTES];

	if (!m)
		return NULL;
	while (read_line(f, line, sizeof(line), &total, max_bytes)) {
		uint64_t start, size;
		char *name;
		size_t len;

		if (!parse_line(line, &start, &size, &name)) {
			m->malformed++;
			continue;
		}
		if (n == PERF_MAP_MAX_SYMBOLS) {
			err = EFBIG;
			goto fail;
		}
		len = strlen(name) + 1;
		if (!grow((void **)&entries, &cap, n + 1, sizeof(*entries)) ||
		    !grow((void **)&m->names, &names_cap, m->names_size + len, 1))
			goto fail;
		memcpy(m->names + m->names_size, name, len);
		entries[n] = (struct entry){ .start = start, .size = size, .name = m->names_size, .order = n };
		m->names_size += len;
		n++;
	}
	if (total > max_bytes) {
		err = EFBIG;
		goto fail;
	}
	if (n) {
		char *names = realloc(m->names, m->names_size); /* give back the pool's slack */

		if (names)
			m->names = names;
		qsort(entries, n, sizeof(*entries), by_start);
		m->syms = malloc(n * sizeof(*m->syms));
		if (!m->syms)
			goto fail;
		/* Same start twice: keep the last line written. */
		for (size_t i = 0; i < n; i++)
			if (i + 1 == n || entries[i + 1].start != entries[i].start)
				m->syms[m->count++] = (struct perf_map_sym){
					.start = entries[i].start, .size = entries[i].size,
					.name = m->names + entries[i].name,
				};
	}
	free(entries);
	return m;

fail:
	free(entries);
	perf_map_free(m);
	errno = err;
	return NULL;
}

void perf_map_free(struct perf_map *m)
{
	if (!m)
		return;
	free(m->syms);
	free(m->names);
	free(m);
}

const struct perf_map_sym *perf_map_lookup(const struct perf_map *m, uint64_t address)
{
	size_t lo = 0, hi;

	if (!m || !m->count || address < m->syms[0].start)
		return NULL;
	hi = m->count;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].start <= address)
			lo = mid;
		else
			hi = mid;
	}
	return address - m->syms[lo].start < m->syms[lo].size ? &m->syms[lo] : NULL;
}

size_t perf_map_count(const struct perf_map *m)
{
	return m ? m->count : 0;
}

size_t perf_map_malformed(const struct perf_map *m)
{
	return m ? m->malformed : 0;
}

size_t perf_map_bytes(const struct perf_map *m)
{
	return m ? sizeof(*m) + m->count * sizeof(*m->syms) + m->names_size : 0;
}

int perf_map_open(int root_fd, const char *path, uid_t uid, struct stat *st)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS,
	};
	int fd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how)), err;

	if (fd < 0)
		return -errno;
	if (fstat(fd, st))
		err = -errno;
	else if (!S_ISREG(st->st_mode))
		err = -EINVAL;
	else if (st->st_uid != uid && (st->st_uid != 0 || st->st_nlink != 1))
		err = -EPERM;
	else if ((uint64_t)st->st_size > PERF_MAP_MAX_FILE_BYTES)
		err = -EFBIG;
	else
		return fd;
	close(fd);
	return err;
}
