// SPDX-License-Identifier: Apache-2.0
#include "dl_lib.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

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
