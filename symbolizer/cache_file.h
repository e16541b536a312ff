/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files the symbolizer keeps on disk for later runs (the kernel's symbols, decompressed debug
 * files): read only from a directory that only the reader or root can write, never through a
 * symbolic link, and written into a 0700 directory of the cache's own.
 */
#ifndef OTELPROF_CACHE_FILE_H
#define OTELPROF_CACHE_FILE_H

#include <stdbool.h>
#include <stddef.h>

/* The directory of path into dir (PATH_MAX bytes); returns where the file's name starts in path,
 * or NULL when the directory does not fit. */
const char *cache_file_split_path(const char *path, char *dir);

/* path's file opened for reading within its directory, which only the reader or root can write
 * (checked on the directory opened, then the file opened in it: no swap between the two); -1 with
 * errno (EPERM: not trusted). */
int cache_file_open_trusted(const char *path);

/* cache_file_open_trusted(path), and the file a regular one of the reader's own, 0600 or narrower;
 * -1 with errno (EPERM: not trusted). */
int cache_file_open_own(const char *path);

/* Make the directory of path and its parent (0700) when they are missing: a directory of the
 * cache's own, trusted even inside a shared one (a Kubernetes emptyDir is mode 0777). */
void cache_file_make_directory(const char *path);

/* All of buf written to fd; false with errno. */
bool cache_file_write_all(int fd, const void *buf, size_t len);

#endif
