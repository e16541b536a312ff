// SPDX-License-Identifier: Apache-2.0
#include "dl_lib.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *dl_lib_sym(struct dl_lib *lib, const char *name)
{
	void *p = dlsym(lib->handle, name);

	if (!p && !lib->missing)
		lib->missing = name;
	return p;
}

static int load_locked(struct dl_lib *lib)
{
	const char *why;

	/* RTLD_LOCAL: the library's symbols serve only the lookups made here; RTLD_NOW: a library
	 * too old for one of its own dependencies fails now, not at a call in the middle of a run. */
	lib->handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
	if (!lib->handle) {
		why = dlerror();
		snprintf(lib->error, sizeof(lib->error), "%s (%s): %s", lib->package, lib->soname,
			 why ? why : "cannot be loaded");
		return -ELIBACC;
	}
	lib->resolve(lib);
	if (lib->missing) {
		snprintf(lib->error, sizeof(lib->error), "%s (%s): the library has no %s (another version?)",
			 lib->package, lib->soname, lib->missing);
		/* Not closed: entry points already resolved stay valid (none is used after a failure). */
		return -ELIBACC;
	}
	return 0;
}

int dl_lib_load(struct dl_lib *lib, char *why, size_t why_size)
{
	int r;

	pthread_mutex_lock(&lib->lock);
	if (!lib->state)
		lib->state = load_locked(lib) ? -1 : 1;
	r = lib->state > 0 ? 0 : -ELIBACC;
	pthread_mutex_unlock(&lib->lock);
	if (r && why)
		snprintf(why, why_size, "%s", lib->error);
	return r;
}

/* Whether dir/soname is a shared object of the same kind as like (class, byte order, machine). */
static bool object_in(const char *dir, size_t dirlen, const char *soname, const ElfW(Ehdr) *like)
{
	char path[PATH_MAX];
	ElfW(Ehdr) eh;
	ssize_t n;
	int fd;

	if (!dirlen || snprintf(path, sizeof(path), "%.*s/%s", (int)dirlen, dir, soname) >= (int)sizeof(path))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = pread(fd, &eh, sizeof(eh), 0);
	close(fd);
	return n == (ssize_t)sizeof(eh) && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	       eh.e_ident[EI_CLASS] == like->e_ident[EI_CLASS] && eh.e_ident[EI_DATA] == like->e_ident[EI_DATA] &&
	       eh.e_type == ET_DYN && eh.e_machine == like->e_machine;
}

bool dl_lib_present(const struct dl_lib *lib)
{
	const char *env = getenv("LD_LIBRARY_PATH"), *slash;
	const ElfW(Ehdr) *libc;
	char usr[PATH_MAX];
	Dl_info info;

	/* The C library (a symbol no sanitizer intercepts): its header, mapped at its base, says what
	 * this process loads; its directory is where the distribution's libraries are. */
	if (!dladdr((void *)&gnu_get_libc_version, &info) || !info.dli_fbase || !info.dli_fname ||
	    !(slash = strrchr(info.dli_fname, '/')))
		return false;
	libc = info.dli_fbase;
	for (const char *p = env; p && *p;) {
		size_t len = strcspn(p, ":");

		if (object_in(p, len, lib->soname, libc))
			return true;
		p += len + (p[len] == ':');
	}
	if (object_in(info.dli_fname, (size_t)(slash - info.dli_fname), lib->soname, libc))
		return true;
	/* /lib/x86_64-linux-gnu's twin, /usr/lib/x86_64-linux-gnu (one directory on a merged /usr). */
	return !strncmp(info.dli_fname, "/lib", 4) &&
	       snprintf(usr, sizeof(usr), "/usr%.*s", (int)(slash - info.dli_fname), info.dli_fname) < (int)sizeof(usr) &&
	       object_in(usr, strlen(usr), lib->soname, libc);
}

const char *dl_lib_error(struct dl_lib *lib)
{
	const char *r;

	pthread_mutex_lock(&lib->lock);
	r = lib->state < 0 ? lib->error : NULL;
	pthread_mutex_unlock(&lib->lock);
	return r;
}

bool dl_lib_loaded(struct dl_lib *lib)
{
	bool r;

	pthread_mutex_lock(&lib->lock);
	r = lib->state > 0;
	pthread_mutex_unlock(&lib->lock);
	return r;
}
