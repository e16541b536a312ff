/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A shared library loaded at its first use (dlopen of its soname) rather than linked: the daemon's
 * exporters (gRPC, libcurl) and debuginfod cost megabytes of resident memory and thousands of
 * relocations at start, and most runs use none or one of them (docs/memory.md).
 *
 * One loader file per library lists the entry points it uses (an X-macro of (api, name) pairs),
 * declares their struct with DL_LIB_FIELD, each typed from the library's own header (__typeof__),
 * so a prototype that changes breaks the build as linking would, and defines it with DL_LIB_DEFINE;
 * dl_lib_load() fills it. A library that is missing or lacks an entry point makes every later
 * dl_lib_load() fail the same way, with a message that names the Debian package.
 *
 * Thread safety: dl_lib_load() may be called from any thread; the entry points are set before it
 * returns 0 and never change afterwards. The library is never unloaded.
 */
#ifndef OTELPROF_DL_LIB_H
#define OTELPROF_DL_LIB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define DL_LIB_ERROR_MAX 320

struct dl_lib {
	const char *soname;         /* what dlopen() asks for: "libgrpc.so.29" */
	const char *package;        /* the Debian package holding it: "libgrpc29" */
	void (*resolve)(struct dl_lib *lib); /* calls dl_lib_sym() for each entry point */
	pthread_mutex_t lock;
	int state;                  /* 0: not tried, 1: loaded, -1: failed (error says why) */
	void *handle;
	const char *missing;        /* first entry point dl_lib_sym() did not find */
	char error[DL_LIB_ERROR_MAX];
};

#define DL_LIB_INIT(so, pkg, fn) { .soname = (so), .package = (pkg), .resolve = (fn), .lock = PTHREAD_MUTEX_INITIALIZER }

/* Load lib (once: later calls return the first outcome). 0, or -ELIBACC with lib->error (and why,
 * when not NULL) set to "PACKAGE (SONAME): why", e.g. "libgrpc29 (libgrpc.so.29): libgrpc.so.29:
 * cannot open shared object file: No such file or directory". */
int dl_lib_load(struct dl_lib *lib, char *why, size_t why_size);
/*
 * Whether lib's soname is, without loading it, a shared object of this machine's kind in a
 * directory the dynamic loader searches ($LD_LIBRARY_PATH, the C library's directory and its /usr
 * twin): a caller can then put dl_lib_load() off until the library's first use, its errors included
 * (a missing dependency). false says only "not found that way": load it now for the real answer.
 */
bool dl_lib_present(const struct dl_lib *lib);
/* Whether lib was loaded by an earlier dl_lib_load() (loads nothing). */
bool dl_lib_loaded(struct dl_lib *lib);
/* lib->error after a failed dl_lib_load(), else NULL (loads nothing). */
const char *dl_lib_error(struct dl_lib *lib);
/* For lib->resolve: the address of name, or NULL (remembered, and the load then fails). */
void *dl_lib_sym(struct dl_lib *lib, const char *name);

/* The struct's field for entry point name, typed by its declaration: ENTRY_POINTS(DL_LIB_FIELD, _). */
#define DL_LIB_FIELD(api, name) __typeof__(name) *name;
#define DL_LIB_RESOLVE(api, name) (api).name = (__typeof__((api).name))dl_lib_sym(lib, #name);

/* In a loader's .c file: `struct api api`, and `api##_dl`, the struct dl_lib that fills it. */
#define DL_LIB_DEFINE(api, entry_points, soname, package) \
	struct api api; \
	static void api##_resolve(struct dl_lib *lib) \
	{ \
		entry_points(DL_LIB_RESOLVE, api) \
	} \
	static struct dl_lib api##_dl = DL_LIB_INIT(soname, package, api##_resolve)

#endif
