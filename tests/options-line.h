/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The flags' tests run options_parse() on a command line written as one string: "otelprofd LINE",
 * LINE split at spaces (so no value holds one). --help and --version write to /dev/null. Include
 * after cmocka.h.
 */
#ifndef OTELPROFD_TESTS_OPTIONS_LINE_H
#define OTELPROFD_TESTS_OPTIONS_LINE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/options.h"

/* options_parse() of "otelprofd LINE", its messages on err. */
static inline enum options_result parse_line(struct options *o, const char *line, FILE *err)
{
	char buf[512], *argv[32];
	int argc = 0;
	FILE *devnull = fopen("/dev/null", "w");
	enum options_result r;

	assert_non_null(devnull);
	snprintf(buf, sizeof(buf), "otelprofd %s", line);
	for (char *tok = strtok(buf, " "); tok && argc < 31; tok = strtok(NULL, " "))
		argv[argc++] = tok;
	argv[argc] = NULL;
	r = options_parse(o, argc, argv, devnull, err);
	fclose(devnull);
	return r;
}

/* parse_line() with all it wrote on stderr in *text (to free). */
static inline enum options_result parse_stderr(struct options *o, const char *line, char **text)
{
	size_t len = 0;
	FILE *err = open_memstream(text, &len);
	enum options_result r;

	assert_non_null(err);
	r = parse_line(o, line, err);
	fclose(err);
	return r;
}

/* parse_line() with the first line it wrote on stderr in msg. */
static inline enum options_result parse_message(struct options *o, const char *line, char *msg, size_t size)
{
	char *text = NULL;
	enum options_result r = parse_stderr(o, line, &text);

	snprintf(msg, size, "%.*s", (int)strcspn(text, "\n"), text);
	free(text);
	return r;
}

#endif
