// SPDX-License-Identifier: Apache-2.0
/* Each process's JIT perf map (/tmp/perf-NSPID.map): read under the process's root, refreshed when
 * it changes, held to the byte bound it shares with the module cache, and looked up. */
#include "symbolizer_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A perf map file is checked for growth at most this often per process (bounds: perf_map.h). */
#define PERF_MAP_CHECK_NS 1000000000ULL

/* Free p's perf map; it is read again at the next check. */
void symbolizer__jit_drop(struct symbolizer *s, struct sym_process *p)
{
	if (!p->jit)
		return;
	perf_map_free(p->jit);
	p->jit = NULL;
	s->perf_map_bytes -= p->jit_bytes;
	s->nperf_maps--;
	p->jit_bytes = 0;
	p->jit_size = p->jit_ino = 0;
	s->stats.perf_map_bytes = s->perf_map_bytes;
}

/* From /proc/PID/status: the innermost pid (the name its perf map carries) and the effective uid. */
static int read_status(pid_t pid, pid_t *nspid, uid_t *euid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	bool uid_found = false;
	FILE *f;

	*nspid = pid;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned long real, effective;

		if (!strncmp(line, "Uid:", 4) && sscanf(line + 4, "%lu %lu", &real, &effective) == 2) {
			*euid = (uid_t)effective;
			uid_found = true;
		} else if (!strncmp(line, "NSpid:", 6)) { /* after Uid: */
			char *last = strrchr(line, '\t');
			pid_t ns = last ? (pid_t)strtol(last + 1, NULL, 10) : 0;

			if (ns > 0)
				*nspid = ns;
			break;
		}
	}
	free(line);
	fclose(f);
	return uid_found ? 0 : -ENOENT;
}

/* A perf map not used (perf_map_open's or perf_map_parse's -errno): counted once until it changes. */
static void jit_refuse(struct symbolizer *s, struct sym_process *p, int err)
{
	if (err == p->jit_refused)
		return;
	p->jit_refused = err;
	if (err == -EFBIG)
		s->stats.perf_maps_too_big++;
	else if (err == -ELOOP || err == -EINVAL || err == -EPERM)
		s->stats.perf_maps_refused++;
}

/* Keep jit as p's perf map within the byte bound (other maps and modules evicted least recently
 * used first); 0, or -EFBIG when it does not fit alone. */
static int jit_keep(struct symbolizer *s, struct sym_process *p, struct perf_map *jit)
{
	symbolizer__jit_drop(s, p);
	p->jit = jit;
	p->jit_bytes = perf_map_bytes(jit);
	p->jit_used = ++s->tick;
	s->perf_map_bytes += p->jit_bytes;
	s->nperf_maps++;
	s->stats.perf_map_bytes = s->perf_map_bytes;
	symbolizer__enforce_bounds(s, 0, NULL, p);
	if (symbolizer__bytes_held(s) <= s->byte_bound)
		return 0;
	symbolizer__jit_drop(s, p);
	return -EFBIG;
}

/* (Re)read the process's perf map when it appeared or changed; checked at most once a second. */
static void refresh_perf_map(struct symbolizer *s, struct sym_process *p)
{
	uint64_t now = symbolizer__now_ns();
	struct perf_map *jit;
	char path[64];
	struct stat st;
	pid_t nspid;
	uid_t euid = 0;
	int root, fd, err;
	FILE *f;

	if (p->jit_checked_ns && now - p->jit_checked_ns < PERF_MAP_CHECK_NS)
		return;
	p->jit_checked_ns = now;
	if (read_status(p->pid, &nspid, &euid) || (root = symbolizer__open_root(p->pid)) < 0)
		return;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", nspid);
	fd = perf_map_open(root, path, euid, &st);
	close(root);
	if (fd < 0) {
		jit_refuse(s, p, fd);
		return;
	}
	if ((uint64_t)st.st_size == p->jit_size && (uint64_t)st.st_ino == p->jit_ino) {
		close(fd);
		return;
	}
	f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		return;
	}
	jit = perf_map_parse(f, PERF_MAP_MAX_FILE_BYTES);
	err = jit ? 0 : -errno;
	fclose(f);
	if (!err) {
		s->stats.perf_map_loads++;
		err = jit_keep(s, p, jit);
	}
	if (err)
		jit_refuse(s, p, err);
	else
		p->jit_refused = 0;
	/* Read or refused after reading: not again until the file changes. */
	p->jit_size = (uint64_t)st.st_size;
	p->jit_ino = (uint64_t)st.st_ino;
}

bool symbolizer__symbolize_jit(struct symbolizer *s, struct sym_process *p, uint64_t address, struct sym_frame *frame)
{
	const struct perf_map_sym *sym;

	if (s->config.no_perf_maps)
		return false;
	sym = perf_map_lookup(p->jit, address);
	if (!sym && !p->retired) {
		refresh_perf_map(s, p);
		sym = perf_map_lookup(p->jit, address);
	}
	if (!sym)
		return false;
	p->jit_used = ++s->tick;
	frame->module = "[jit]";
	frame->lines[0] = (struct sym_line){ .function = sym->name, .system_name = sym->name };
	frame->nlines = 1;
	s->stats.jit_symbolized++;
	s->stats.symbolized++;
	return true;
}
