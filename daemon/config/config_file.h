/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration file: one "key = value" per line, '#' starts a comment, blank lines are
 * ignored, a value may be double-quoted to keep surrounding spaces (\" and \\ inside quotes).
 * Keys are otelprofd's long option names ('_' reads as '-'). This module only reads the file;
 * options.c decides what each key means.
 *
 * config_file_parse()/config_file_load() return an object that owns every string in it;
 * config_file_free() releases it.
 */
#ifndef OTELPROFD_CONFIG_FILE_H
#define OTELPROFD_CONFIG_FILE_H

#include <stddef.h>
#include <stdio.h>

#define CONFIG_MAX_BYTES (1 << 20)
#define CONFIG_MAX_LINE 4096
#define CONFIG_MAX_ENTRIES 1024

struct config_entry {
	char *key;
	char *value;
	unsigned line; /* 1-based line number, for error messages */
};

struct config_file {
	char *name; /* path, as given */
	struct config_entry *entries;
	size_t nentries;
};

/*
 * Parse a stream. 0 with *out set, or -EINVAL / -EFBIG / -ENOMEM with a one-line reason
 * ("NAME:LINE: what is wrong") in err.
 */
int config_file_parse(FILE *f, const char *name, struct config_file **out, char *err, size_t errlen);
/* config_file_parse() of a file; -errno with a reason in err when it cannot be read. */
int config_file_load(const char *path, struct config_file **out, char *err, size_t errlen);
void config_file_free(struct config_file *c);

#endif
