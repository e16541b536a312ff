// SPDX-License-Identifier: Apache-2.0
#include "kallsyms_cache.h"
#include "cache_file.h"
#include "kallsyms_table.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_MAGIC "otpdksy1"
#define CACHE_VERSION 1
/* Bounds of a file read back (a kernel has some 200,000 symbols, 5 MiB of names). */
#define MAX_SYMS (1u << 23)
#define MAX_MODULES (1u << 16)
#define MAX_STRINGS ((size_t)256 << 20)

struct cache_header {
	char magic[8];
	uint32_t version;
	uint32_t sizes;   /* sizeof the entry and module structs, and of this header: a build of
			     another layout never reads it */
	struct kallsyms_cache_key key;
	uint64_t nsyms, nmodules, strings_len; /* then modules[], syms[] and strings, in that order */
};

_Static_assert(sizeof(struct cache_header) % 8 == 0, "the arrays after the header stay aligned");

static uint32_t layout(void)
{
	return (uint32_t)(sizeof(struct ksym_entry) << 24 | sizeof(struct ksym_module) << 16 |
			  sizeof(struct cache_header));
}

/* Read up to size bytes of a small file; -errno, else the count. */
static ssize_t read_small(const char *path, void *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size);
	if (n < 0)
		n = -errno;
	close(fd);
	return n;
}

/* The GNU build id note among the ELF notes of /sys/kernel/notes (4-byte aligned). */
static void build_id_of(struct kallsyms_cache_key *key, const unsigned char *notes, size_t len)
{
	size_t at = 0;

	while (len - at >= 12) {
		uint32_t namesz, descsz, type;
		size_t name_at = at + 12, desc_at, next;

		memcpy(&namesz, notes + at, 4);
		memcpy(&descsz, notes + at + 4, 4);
		memcpy(&type, notes + at + 8, 4);
		desc_at = name_at + (((size_t)namesz + 3) & ~(size_t)3);
		next = desc_at + (((size_t)descsz + 3) & ~(size_t)3);
		if (namesz > len || descsz > len || next > len)
			return;
		if (type == 3 && namesz == 4 && !memcmp(notes + name_at, "GNU", 4) && descsz &&
		    descsz <= sizeof(key->build_id)) {
			memcpy(key->build_id, notes + desc_at, descsz);
			key->build_id_len = descsz;
			return;
		}
		at = next;
	}
}

int kallsyms_cache_key_read(struct kallsyms_cache_key *key, const char *kallsyms_path, uint64_t modules_hash,
			    const char *boot_id_path, const char *notes_path)
{
	unsigned char notes[4096];
	ssize_t n;

	memset(key, 0, sizeof(*key));
	n = read_small(boot_id_path ? boot_id_path : "/proc/sys/kernel/random/boot_id", key->boot_id,
		       sizeof(key->boot_id) - 1);
	if (n <= 0)
		return n < 0 ? (int)n : -ENODATA;
	n = read_small(notes_path ? notes_path : "/sys/kernel/notes", notes, sizeof(notes));
	if (n > 0)
		build_id_of(key, notes, (size_t)n);
	/* One read: the kernel formats only the lines it needs for these bytes. */
	n = read_small(kallsyms_path, key->head, sizeof(key->head));
	if (n <= 0)
		return n < 0 ? (int)n : -ENODATA;
	key->head_len = (uint32_t)n;
	key->modules_hash = modules_hash;
	return 0;
}

/* len bytes at off of fd into buf: true when all were read. */
static bool pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return true;
}

void kallsyms_file_free(struct kallsyms_file *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	free(f->index);
	free(f);
}

/* The entries read once, in blocks through one buffer: each KSYM_FILE_BLOCK'th address indexed,
 * their order checked. 0, or an errno. */
static int index_entries(struct kallsyms *k)
{
	enum { CHUNK = 4096 }; /* entries per read: 64 KiB */
	struct kallsyms_file *f = k->file;
	struct ksym_entry *buf = malloc(CHUNK * sizeof(*buf));
	uint64_t prev = 0;
	int err = 0;

	f->nindex = (k->count + KSYM_FILE_BLOCK - 1) / KSYM_FILE_BLOCK;
	f->index = malloc(f->nindex * sizeof(*f->index));
	if (!buf || !f->index) {
		free(buf);
		return ENOMEM;
	}
	for (size_t at = 0; at < k->count && !err; at += CHUNK) {
		size_t n = k->count - at < CHUNK ? k->count - at : CHUNK;

		if (!pread_all(f->fd, buf, n * sizeof(*buf), f->syms_off + at * sizeof(*buf))) {
			err = EBADMSG;
			break;
		}
		for (size_t i = 0; i < n; i++) {
			if (buf[i].address < prev) {
				err = EBADMSG;
				break;
			}
			prev = buf[i].address;
			if ((at + i) % KSYM_FILE_BLOCK == 0)
				f->index[(at + i) / KSYM_FILE_BLOCK] = prev;
			if (at + i == 0)
				f->first_address = prev;
		}
	}
	f->last_address = prev;
	free(buf);
	return err;
}

const struct ksym_entry *kallsyms_file_entry(const struct kallsyms *k, uint64_t address)
{
	struct kallsyms_file *f = k->file;
	size_t lo = 0, hi = f->nindex, n;

	if (!k->count || address < f->first_address)
		return NULL;
	while (hi - lo > 1) { /* the last block whose first entry is at or below address */
		size_t mid = lo + (hi - lo) / 2;

		if (f->index[mid] <= address)
			lo = mid;
		else
			hi = mid;
	}
	n = k->count - lo * KSYM_FILE_BLOCK < KSYM_FILE_BLOCK ? k->count - lo * KSYM_FILE_BLOCK : KSYM_FILE_BLOCK;
	if (!pread_all(f->fd, f->block, n * sizeof(f->block[0]), f->syms_off + lo * KSYM_FILE_BLOCK * sizeof(f->block[0])))
		return NULL;
	hi = n;
	lo = 0;
	if (f->block[0].address > address) /* the file changed under us: not trusted */
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->block[mid].address <= address)
			lo = mid;
		else
			hi = mid;
	}
	return &f->block[lo];
}

const char *kallsyms_file_string(const struct kallsyms *k, uint32_t off, char *buf)
{
	size_t len = k->strings_len - off < KSYM_FILE_NAME_MAX ? k->strings_len - off : KSYM_FILE_NAME_MAX;

	if (off >= k->strings_len || !pread_all(k->file->fd, buf, len, k->file->strings_off + off) ||
	    !memchr(buf, '\0', len))
		return NULL;
	return buf;
}

/* What can be checked of a table read back at once: its modules, the names' end, the entries' order. */
static int table_check(struct kallsyms *k)
{
	char last;

	if (!k->nmodules || !pread_all(k->file->fd, &last, 1, k->file->strings_off + k->strings_len - 1) || last)
		return EBADMSG;
	for (size_t i = 1; i < k->nmodules; i++)
		if (k->modules[i].name >= k->strings_len || k->modules[i].pad)
			return EBADMSG;
	return index_entries(k);
}

/*
 * Neither mapped nor read whole: a lookup reads the block of entries it needs and its name
 * (kallsyms_file_entry(), kallsyms_file_string()); the entries are read once here, through a
 * 64 KiB buffer, to index their blocks and check their order. Mapped, a busy host's lookups
 * faulted in most of the file over a run (4-4.4 MiB of RSS); copied whole, 5 MiB of fresh pages.
 * The file is trusted (owner, mode) and its header, sizes and modules are checked; an entry is
 * checked when a lookup finds it (offsets and indexes bounded: a damaged file names frames wrongly
 * at worst, never reads outside itself). The file stays open (one descriptor) with the table.
 */
struct kallsyms *kallsyms_cache_read(const char *path, const struct kallsyms_cache_key *key)
{
	struct cache_header hdr;
	struct kallsyms *k = NULL;
	struct stat st;
	int fd, err = EBADMSG;

	fd = cache_file_open_own(path);
	if (fd < 0 || fstat(fd, &st)) {
		err = errno;
		goto fail;
	}
	if ((uint64_t)st.st_size < sizeof(hdr) || (uint64_t)st.st_size > 2 * MAX_STRINGS ||
	    !pread_all(fd, &hdr, sizeof(hdr), 0))
		goto fail;
	if (memcmp(hdr.magic, CACHE_MAGIC, 8) || hdr.version != CACHE_VERSION || hdr.sizes != layout())
		goto fail;
	if (memcmp(&hdr.key, key, sizeof(*key))) {
		err = ESTALE;
		goto fail;
	}
	if (!hdr.nsyms || hdr.nsyms > MAX_SYMS || !hdr.nmodules || hdr.nmodules > MAX_MODULES ||
	    !hdr.strings_len || hdr.strings_len > MAX_STRINGS ||
	    (uint64_t)st.st_size != sizeof(hdr) + hdr.nmodules * sizeof(struct ksym_module) +
					    hdr.nsyms * sizeof(struct ksym_entry) + hdr.strings_len)
		goto fail;
	err = ENOMEM;
	if (!(k = calloc(1, sizeof(*k))) || !(k->file = calloc(1, sizeof(*k->file))))
		goto fail;
	k->file->fd = fd; /* kallsyms_free() closes it from here on */
	fd = -1;
	if (!(k->found = malloc(sizeof(*k->found))) || !(k->modules = malloc(hdr.nmodules * sizeof(*k->modules))))
		goto fail;
	k->nmodules = k->modules_cap = hdr.nmodules;
	k->count = hdr.nsyms;
	k->strings_len = hdr.strings_len;
	k->file->syms_off = sizeof(hdr) + hdr.nmodules * sizeof(struct ksym_module);
	k->file->strings_off = k->file->syms_off + hdr.nsyms * sizeof(struct ksym_entry);
	err = EBADMSG;
	if (!pread_all(k->file->fd, k->modules, hdr.nmodules * sizeof(*k->modules), sizeof(hdr)))
		goto fail;
	if ((err = table_check(k)))
		goto fail;
	k->partial = true;
	return k;

fail:
	kallsyms_free(k); /* closes the file it holds */
	if (fd >= 0)
		close(fd);
	errno = err;
	return NULL;
}

/* The lasting symbols: the kernel's own, and those of modules whose range is known. */
static bool lasting(const struct kallsyms *k, const struct ksym_entry *e)
{
	uint32_t m = e->module & ~KSYM_END_MARKER;

	return m == 0 || k->modules[m].end != 0;
}

int kallsyms_cache_write(const char *path, const struct kallsyms *k, const struct kallsyms_cache_key *key)
{
	struct cache_header hdr = { .magic = CACHE_MAGIC, .version = CACHE_VERSION, .sizes = layout(), .key = *key };
	struct ksym_entry *syms;
	char tmp[PATH_MAX];
	size_t n = 0;
	int fd, r = 0;

	if (!k || k->file || k->hidden || k->partial || !k->count) /* a full read's, in memory */
		return -EINVAL;
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	if (!(syms = malloc(k->count * sizeof(*syms))))
		return -ENOMEM;
	for (size_t i = 0; i < k->count; i++)
		if (lasting(k, &k->syms[i]))
			syms[n++] = k->syms[i];
	hdr.nsyms = n;
	hdr.nmodules = k->nmodules;
	hdr.strings_len = k->strings_len;
	cache_file_make_directory(path);
	fd = mkostemp(tmp, O_CLOEXEC); /* mode 0600 */
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	if (fchmod(fd, 0600) || !cache_file_write_all(fd, &hdr, sizeof(hdr)) ||
	    !cache_file_write_all(fd, k->modules, k->nmodules * sizeof(*k->modules)) ||
	    !cache_file_write_all(fd, syms, n * sizeof(*syms)) || !cache_file_write_all(fd, k->strings, k->strings_len))
		r = errno ? -errno : -EIO;
	if (close(fd) && !r)
		r = -errno;
	if (!r && rename(tmp, path))
		r = -errno;
	if (r)
		unlink(tmp);
out:
	free(syms);
	return r;
}

int kallsyms_cache_join(struct kallsyms *cached, const struct kallsyms *full)
{
	struct kallsyms *c;
	size_t n = 0, names = 0, at = 0, lasting_count = 0;

	if (!cached || !full || !cached->file || cached->changing || full->file || full->hidden || full->partial)
		return -EINVAL;
	for (size_t i = 0; i < full->count; i++) {
		if (lasting(full, &full->syms[i])) {
			lasting_count++;
		} else {
			n++;
			names += strlen(full->strings + full->syms[i].name) + 1;
		}
	}
	/* The same lasting symbols, and each one at the same place (spot-checked at both ends). */
	if (lasting_count != cached->count || cached->nmodules != full->nmodules)
		return -ESTALE;
	for (size_t i = 0; i < full->count; i++)
		if (lasting(full, &full->syms[i])) {
			if (full->syms[i].address != cached->file->first_address)
				return -ESTALE;
			break;
		}
	for (size_t i = full->count; i-- > 0;)
		if (lasting(full, &full->syms[i])) {
			if (full->syms[i].address != cached->file->last_address)
				return -ESTALE;
			break;
		}
	for (size_t i = 0; i < full->nmodules; i++)
		names += strlen(full->strings + full->modules[i].name) + 1;
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	c->syms = malloc((n ? n : 1) * sizeof(*c->syms));
	c->modules = malloc(full->nmodules * sizeof(*c->modules));
	c->strings = malloc(names ? names : 1);
	c->found = malloc(sizeof(*c->found));
	if (!c->syms || !c->modules || !c->strings || !c->found) {
		kallsyms_free(c);
		return -ENOMEM;
	}
	/* Module names first (the same indexes as full's), then the symbols' names. */
	for (size_t i = 0; i < full->nmodules; i++) {
		const char *name = full->strings + full->modules[i].name;
		size_t len = strlen(name) + 1;

		c->modules[i] = full->modules[i];
		c->modules[i].name = (uint32_t)at;
		memcpy(c->strings + at, name, len);
		at += len;
	}
	c->nmodules = c->modules_cap = full->nmodules;
	for (size_t i = 0; i < full->count; i++) {
		const struct ksym_entry *e = &full->syms[i];
		const char *name = full->strings + e->name;
		size_t len = strlen(name) + 1;

		if (lasting(full, e))
			continue;
		c->syms[c->count++] = (struct ksym_entry){ .address = e->address, .name = (uint32_t)at, .module = e->module };
		memcpy(c->strings + at, name, len);
		at += len;
	}
	c->strings_len = at;
	cached->changing = c;
	cached->partial = false;
	return 0;
}
