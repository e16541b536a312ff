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
#include <sys/mman.h>
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

/* The names' pool ends a name, the modules' names are within it. The entries are checked as they
 * are used (kallsyms_lookup() bounds each one it returns): checking them all here would touch all
 * 2 MiB of them, which a run that names a few hundred kernel functions never needs. */
static bool table_valid(const struct kallsyms *k)
{
	if (!k->strings_len || k->strings[k->strings_len - 1] || !k->nmodules ||
	    k->syms[0].address > k->syms[k->count - 1].address)
		return false;
	for (size_t i = 1; i < k->nmodules; i++)
		if (k->modules[i].name >= k->strings_len || k->modules[i].pad)
			return false;
	return true;
}

/*
 * Mapped, not read: the file's pages are in the page cache, and copying them into new memory costs
 * more than all the rest (fresh pages are zeroed first, 5 MiB of them). The file is trusted (owner,
 * mode) and its header, sizes and modules are checked; an entry is checked when a lookup finds it
 * (offsets and indexes bounded: a damaged file names frames wrongly at worst, never reads outside
 * itself). Only the pages of the entries and names looked up are touched.
 */
struct kallsyms *kallsyms_cache_read(const char *path, const struct kallsyms_cache_key *key)
{
	const struct cache_header *hdr;
	struct kallsyms *k = NULL;
	struct stat st;
	char *map = MAP_FAILED;
	int fd, err = EBADMSG;

	fd = cache_file_open_own(path);
	if (fd < 0 || fstat(fd, &st)) {
		err = errno;
		goto fail;
	}
	if ((uint64_t)st.st_size < sizeof(*hdr) || (uint64_t)st.st_size > 2 * MAX_STRINGS)
		goto fail;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		err = errno;
		goto fail;
	}
	hdr = (const struct cache_header *)map;
	if (memcmp(hdr->magic, CACHE_MAGIC, 8) || hdr->version != CACHE_VERSION || hdr->sizes != layout())
		goto fail;
	if (memcmp(&hdr->key, key, sizeof(*key))) {
		err = ESTALE;
		goto fail;
	}
	if (!hdr->nsyms || hdr->nsyms > MAX_SYMS || !hdr->nmodules || hdr->nmodules > MAX_MODULES ||
	    !hdr->strings_len || hdr->strings_len > MAX_STRINGS ||
	    (uint64_t)st.st_size != sizeof(*hdr) + hdr->nmodules * sizeof(struct ksym_module) +
					    hdr->nsyms * sizeof(struct ksym_entry) + hdr->strings_len)
		goto fail;
	err = ENOMEM;
	if (!(k = calloc(1, sizeof(*k))))
		goto fail;
	k->map = map; /* kallsyms_free() unmaps it from here on */
	k->map_len = (size_t)st.st_size;
	if (!(k->found = malloc(sizeof(*k->found))))
		goto fail;
	k->modules = (struct ksym_module *)(map + sizeof(*hdr));
	k->nmodules = k->modules_cap = hdr->nmodules;
	k->syms = (struct ksym_entry *)(map + sizeof(*hdr) + hdr->nmodules * sizeof(struct ksym_module));
	k->count = hdr->nsyms;
	k->strings = (char *)k->syms + hdr->nsyms * sizeof(struct ksym_entry);
	k->strings_len = hdr->strings_len;
	err = EBADMSG;
	if (!table_valid(k))
		goto fail;
	close(fd);
	k->partial = true;
	return k;

fail:
	if (k)
		kallsyms_free(k); /* unmaps */
	else if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
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

	if (!k || k->hidden || k->partial || !k->count)
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

	if (!cached || !full || !cached->map || cached->changing || full->hidden || full->partial)
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
			if (full->syms[i].address != cached->syms[0].address)
				return -ESTALE;
			break;
		}
	for (size_t i = full->count; i-- > 0;)
		if (lasting(full, &full->syms[i])) {
			if (full->syms[i].address != cached->syms[cached->count - 1].address)
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
