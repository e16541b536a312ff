/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A file the daemon writes as its output (-o FILE.folded, .pb.gz, .otlp): there whole, or not at all.
 *
 * The contents go to a new temporary file beside the final name, created with O_EXCL and O_NOFOLLOW
 * (a link planted at any name is never followed), and are flushed and synced before rename() puts
 * the file in place. rename() replaces a symbolic link at the final name with the file itself and
 * leaves its target alone; a full or failing disk leaves the final name as it was and no temporary.
 *
 * A path that is there and is neither a regular file nor a directory (/dev/null, /dev/stdout, a FIFO)
 * is written in place instead: renaming over it would replace the device (as root, /dev/null itself).
 * A FIFO without a reader is ENXIO at open, never a wait.
 *
 * Mode 0644 less the umask, as any file a command writes: a profile is meant to be read and shared
 * (flame graphs, pprof), and a user who wants it private sets a umask, which is honoured.
 */
#ifndef OTELPROFD_OUTPUT_FILE_H
#define OTELPROFD_OUTPUT_FILE_H

#include <stdio.h>

struct output_file;

/* A new temporary file beside path (or path itself, opened, when it is a device or a FIFO). NULL
 * with errno set. */
struct output_file *output_file_open(const char *path);
/* The stream to write the contents to, owned by f. */
FILE *output_file_stream(struct output_file *f);
/* Flush, sync, close and rename the file over path; frees f. 0 or -errno: on failure the temporary
 * is removed and path is untouched. */
int output_file_commit(struct output_file *f);
/* Remove the temporary file and free f. Accepts NULL. */
void output_file_abort(struct output_file *f);
/* Could a file be written at path now? 0, or -errno: -EISDIR when path is a directory, else what
 * creating a temporary file beside it said (-ENOENT: no such directory; -EACCES, -EROFS...). */
int output_file_check(const char *path);
/* A new empty file of this user's in dir, named "otelprofd-XXXXXX-" and the last part of path (so it
 * keeps path's extension), created with O_EXCL and mode 0600, never through a link: for a profile
 * whose own path failed. Its name into buf; 0 or -errno. */
int output_file_fallback(const char *dir, const char *path, char *buf, size_t size);

#endif
