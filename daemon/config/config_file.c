// SPDX-License-Identifier: Apache-2.0
#include "config/config_file.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parse.h"

__attribute__((format(printf, 5, 6)))
static int fail(int code, char *err, size_t errlen, const char *name, const char *fmt, ...)
{
	size_t n = (size_t)snprintf(err, errlen, "%s:", name);
	va_list ap;

	if (n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - n, fmt, ap);
		va_end(ap);
	}
	return code;
}

static bool valid_key(const char *k)
{
	if (!*k)
		return false;
	for (; *k; k++)
		if (!islower((unsigned char)*k) && !isdigit((unsigned char)*k) && *k != '-' && *k != '_')
			return false;
	return true;
}

/* Unquote a "..." value in place; NULL when the quotes are unbalanced or text follows them. */
static char *unquote(char *v)
{
	char *out = v, *in = v + 1;

	for (; *in && *in != '"'; in++) {
		if (*in == '\\' && (in[1] == '"' || in[1] == '\\'))
			in++;
		*out++ = *in;
	}
	if (*in != '"' || *parse_trim(in + 1))
		return NULL;
	*out = 0;
	return v;
}

int config_file_parse(FILE *f, const char *name, struct config_file **out, char *err, size_t errlen)
{
	struct config_file *c = calloc(1, sizeof(*c));
	size_t cap = 0, total = 0, linecap = 0;
	unsigned lineno = 0;
	char *line = NULL;
	ssize_t len;
	int r = -ENOMEM;

	if (!c || !(c->name = strdup(name)))
		goto fail;
	while ((len = getline(&line, &linecap, f)) > 0) {
		char *key, *value, *eq, *hash;

		lineno++;
		total += (size_t)len;
		/* Editors on other systems start files with a UTF-8 byte order mark. */
		if (lineno == 1 && len >= 3 && !memcmp(line, "\xef\xbb\xbf", 3)) {
			memmove(line, line + 3, (size_t)len - 2);
			len -= 3;
		}
		if (total > CONFIG_MAX_BYTES) {
			r = fail(-EFBIG, err, errlen, name, "%u: the file is larger than %d bytes", lineno, CONFIG_MAX_BYTES);
			goto fail;
		}
		if (len > CONFIG_MAX_LINE) {
			r = fail(-EINVAL, err, errlen, name, "%u: line longer than %d characters", lineno, CONFIG_MAX_LINE);
			goto fail;
		}
		if (strlen(line) != (size_t)len) {
			r = fail(-EINVAL, err, errlen, name, "%u: NUL byte in the line", lineno);
			goto fail;
		}
		key = parse_trim(line);
		if (!*key || *key == '#')
			continue;
		eq = strchr(key, '=');
		if (!eq) {
			r = fail(-EINVAL, err, errlen, name, "%u: expected 'key = value'", lineno);
			goto fail;
		}
		*eq = 0;
		value = parse_trim(eq + 1);
		key = parse_trim(key);
		for (char *k = key; *k; k++)
			if (*k == '_')
				*k = '-';
		if (!valid_key(key)) {
			char shown[48];

			/* Shown only when it looks like a mistyped key: a line of another format could hold a
			 * secret before its '=' ("Authorization: Basic dXNlcjpwYXNz=="). */
			if (strlen(key) < 32 && !strpbrk(key, " \t:"))
				r = fail(-EINVAL, err, errlen, name, "%u: '%s' is not a valid key", lineno,
					 parse_escape(key, shown, sizeof(shown)));
			else
				r = fail(-EINVAL, err, errlen, name, "%u: not a valid key (keys are option names: a-z, 0-9, "
					 "'-')", lineno);
			goto fail;
		}
		if (*value == '"') {
			if (!unquote(value)) {
				r = fail(-EINVAL, err, errlen, name, "%u: unbalanced quotes in the value of '%s'", lineno, key);
				goto fail;
			}
		} else if ((hash = strstr(value, " #")) || (hash = strstr(value, "\t#"))) {
			*hash = 0; /* a comment after an unquoted value */
			value = parse_trim(value);
		}
		if (c->nentries == CONFIG_MAX_ENTRIES) {
			r = fail(-EFBIG, err, errlen, name, "%u: more than %d settings", lineno, CONFIG_MAX_ENTRIES);
			goto fail;
		}
		if (c->nentries == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct config_entry *grown = realloc(c->entries, ncap * sizeof(*grown));

			if (!grown)
				goto fail;
			c->entries = grown;
			cap = ncap;
		}
		c->entries[c->nentries] = (struct config_entry){ strdup(key), strdup(value), lineno };
		if (!c->entries[c->nentries].key || !c->entries[c->nentries].value) {
			free(c->entries[c->nentries].key);
			free(c->entries[c->nentries].value);
			goto fail;
		}
		c->nentries++;
	}
	if (ferror(f)) {
		r = fail(-EIO, err, errlen, name, " read error");
		goto fail;
	}
	free(line);
	*out = c;
	return 0;

fail:
	if (r == -ENOMEM)
		fail(r, err, errlen, name, " out of memory");
	free(line);
	config_file_free(c);
	return r;
}

int config_file_load(const char *path, struct config_file **out, char *err, size_t errlen)
{
	/* Non-blocking, so that opening a FIFO (or a device) cannot hang; symlinks are followed, as
	 * /etc often holds them. Only a regular file is read. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), r;
	struct stat st;
	FILE *f;

	if (fd < 0)
		return fail(-errno, err, errlen, path, " %s", strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail(-EINVAL, err, errlen, path, " not a regular file");
	}
	f = fdopen(fd, "r");
	if (!f) {
		r = -errno;
		close(fd);
		return fail(r, err, errlen, path, " %s", strerror(-r));
	}
	r = config_file_parse(f, path, out, err, errlen);
	fclose(f);
	return r;
}

void config_file_free(struct config_file *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nentries; i++) {
		free(c->entries[i].key);
		free(c->entries[i].value);
	}
	free(c->entries);
	free(c->name);
	free(c);
}
