// SPDX-License-Identifier: Apache-2.0
/*
 * The separate debug file of a module, found for libdwfl while the module opens: host build-id
 * directories, .gnu_debuglink next to the binary (inside the process's root) or under the host's
 * debug directories, then debuginfod's cache. A candidate is used only when it belongs to the
 * binary (build id, else CRC) and fits the module's byte bound.
 */
#include "elf_module_internal.h"
#include "debug_plain.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

static const char *const default_debug_dirs[] = { "/usr/lib/debug", NULL };

static bool same_build_id(const struct elf_module *m, int fd)
{
	const void *bits;
	ssize_t n;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	bool same;

	if (!elf)
		return false;
	n = dwelf_elf_gnu_build_id(elf, &bits);
	same = n > 0 && (size_t)n == m->build_id_len && !memcmp(bits, m->build_id_raw, m->build_id_len);
	elf_end(elf);
	return same;
}

static bool same_crc(struct elf_module *m, int fd, GElf_Word crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, NULL, 0);
	struct stat st;
	off_t off = 0;
	ssize_t n;

	if (fstat(fd, &st) || (uint64_t)st.st_size > ELF_MODULE_MAX_CRC_BYTES ||
	    m->crc_bytes + (uint64_t)st.st_size > ELF_MODULE_MAX_CRC_TOTAL) {
		m->counters.debuglink_too_big++;
		return false;
	}
	m->crc_bytes += (uint64_t)st.st_size;
	while (off < st.st_size && (n = pread(fd, buf, sizeof(buf), off)) > 0) {
		c = crc32(c, buf, (uInt)n);
		off += n;
	}
	return off == st.st_size && (GElf_Word)c == crc;
}

/* fd, or its decompressed copy when one is kept (or made now) and has the module's build id. */
static int plain_copy(struct elf_module *m, int fd, size_t inflated)
{
	enum debug_plain_result result;
	int plain;

	if (!m->opening || !m->opening->debug_plain_dir || !m->build_id_len)
		return fd;
	plain = debug_plain_open(m->opening->debug_plain_dir, fd, m->build_id, inflated, DEBUG_PLAIN_MIN_INFLATED, &result,
				 &m->counters.debug_plain_evicted);
	if (plain >= 0 && !same_build_id(m, plain)) {
		close(plain);
		plain = -1;
		result = DEBUG_PLAIN_FAILED;
	}
	m->counters.debug_plain_read += result == DEBUG_PLAIN_READ;
	m->counters.debug_plain_written += result == DEBUG_PLAIN_WRITTEN;
	m->counters.debug_plain_failed += result == DEBUG_PLAIN_FAILED;
	if (plain < 0)
		return fd;
	close(fd);
	return plain;
}

/* A candidate is used only when it is a regular, sane ELF that belongs to this binary, and when
 * what libdw would inflate of it fits the module's bound (else refused, counted). */
static int accept_debug_fd(struct elf_module *m, int fd, GElf_Word crc, bool check_crc)
{
	struct elf_cost cost;
	size_t size;

	if (fd < 0)
		return -1;
	if (elf_module__file_cost(fd, &size, &cost) == 0 &&
	    (m->build_id_len ? same_build_id(m, fd) : check_crc && same_crc(m, fd, crc))) {
		if (elf_module__affords(m, elf_cost_add(size, cost.symbols, cost.dwarf))) {
			m->file_bytes += size;
			m->libdw_bytes += cost.symbols + cost.dwarf;
			m->cfi_bytes_max += cost.cfi / LIBDW_FDE_MIN_SIZE * LIBDW_FDE_BYTES;
			/* Accounted as the file it copies: the copy's pages are mapped rather than
			 * inflated on the heap, about as many bytes. */
			return plain_copy(m, fd, cost.dwarf);
		}
		elf_module__refused(m, elf_cost_add(size, cost.symbols, cost.dwarf));
	}
	close(fd);
	return -1;
}

static int open_in_root(int root_fd, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (root_fd < 0)
		return open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	fd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	return fd < 0 ? -1 : fd;
}

/* out = a b c d, false when it does not fit. */
static bool path_join(char *out, size_t size, const char *a, const char *b, const char *c, const char *d)
{
	const char *parts[4] = { a, b, c, d };
	size_t n = 0;

	for (int i = 0; i < 4; i++) {
		size_t len = strlen(parts[i]);

		if (n + len >= size)
			return false;
		memcpy(out + n, parts[i], len);
		n += len;
	}
	out[n] = 0;
	return true;
}

int elf_module__find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
			       const char *file_name, const char *debuglink, GElf_Word crc, char **debug_name)
{
	struct elf_module *m = *userdata;
	const struct elf_module_options *o = m->opening;
	const char *const *dirs = o && o->debug_dirs ? o->debug_dirs : default_debug_dirs;
	char path[4096], dir[4096];
	int fd;

	if (!o)
		return -1;
	/* 1. Host build-id directories: DIR/.build-id/xx/yyyy.debug */
	if (m->build_id && m->build_id_len > 1) {
		char head[3] = { m->build_id[0], m->build_id[1], 0 }, tail[160];

		if (!path_join(tail, sizeof(tail), "/", m->build_id + 2, ".debug", ""))
			return -1;
		for (const char *const *d = dirs; *d; d++) {
			if (!path_join(path, sizeof(path), *d, "/.build-id/", head, tail))
				continue;
			fd = accept_debug_fd(m, open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), crc, false);
			if (fd >= 0)
				return fd;
		}
	}
	/* 2. .gnu_debuglink: next to the binary and in its .debug/ (inside the process's root),
	 *    then under the host's debug directories. */
	if (debuglink && !strchr(debuglink, '/') && o->path && o->path[0] == '/') {
		const char *slash = strrchr(o->path, '/');
		size_t dlen = (size_t)(slash - o->path);

		if (dlen >= sizeof(dir))
			return -1;
		memcpy(dir, o->path, dlen);
		dir[dlen] = 0;
		if (path_join(path, sizeof(path), "", dir, "/", debuglink)) {
			fd = accept_debug_fd(m, open_in_root(o->root_fd, path), crc, true);
			if ((m->debug_in_root = fd >= 0))
				return fd;
		}
		if (path_join(path, sizeof(path), "", dir, "/.debug/", debuglink)) {
			fd = accept_debug_fd(m, open_in_root(o->root_fd, path), crc, true);
			if ((m->debug_in_root = fd >= 0))
				return fd;
		}
		for (const char *const *d = dirs; *d; d++) {
			if (!path_join(path, sizeof(path), *d, dir, "/", debuglink))
				continue;
			fd = accept_debug_fd(m, open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), crc, true);
			if (fd >= 0)
				return fd;
		}
	}
	/* 3. debuginfod: the cached download, or queue it (never waits for the network). */
	if (o->debuginfod && m->build_id_len) {
		fd = debuginfo_fetch_lookup(o->debuginfod, m->build_id_raw, m->build_id_len);
		if (fd >= 0) {
			fd = accept_debug_fd(m, fd, crc, false);
			if (fd < 0) /* garbage from a server: drop it, do not ask again for a while */
				debuginfo_fetch_reject(o->debuginfod, m->build_id_raw, m->build_id_len);
			return fd;
		}
	}
	return -1;
}
