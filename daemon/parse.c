// SPDX-License-Identifier: Apache-2.0
#include "parse.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

char *parse_trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = 0;
	return s;
}

int parse_port(const char *text, size_t len, unsigned *port)
{
	unsigned v = 0;

	/* At most 5 digits: no sign, no spaces, no overflow to think about. */
	if (!len || len > 5)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (text[i] < '0' || text[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(text[i] - '0');
	}
	if (v < 1 || v > 65535)
		return -EINVAL;
	*port = v;
	return 0;
}

/* RFC 1123 host name: dot-separated labels of letters, digits and inner '-', 1-63 bytes each. */
static bool host_name_ok(const char *h, size_t len)
{
	size_t label = 0;

	if (len && h[len - 1] == '.')
		len--; /* the root's dot of a fully qualified name */
	if (!len || len > 253)
		return false;
	for (size_t i = 0; i <= len; i++) {
		char c = i < len ? h[i] : '.';

		if (c == '.') {
			if (!label || h[i - 1] == '-')
				return false;
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			   (c == '-' && label)) {
			if (++label > 63)
				return false;
		} else {
			return false;
		}
	}
	return true;
}

int parse_host_port(const char *text, size_t len, bool port_required, char *host, size_t hostlen, unsigned *port,
		    const char **why)
{
	const char *end = text + len, *h = text, *colon;
	size_t n;

	*port = 0;
	if (memchr(text, '@', len)) {
		*why = "user:password@ is not supported";
		return -EINVAL;
	}
	if (len && text[0] == '[') {
		const char *close = memchr(text, ']', len);

		if (!close) {
			*why = "no ']' after the IPv6 address";
			return -EINVAL;
		}
		h = text + 1;
		n = (size_t)(close - h);
		colon = close + 1 < end ? close + 1 : NULL;
		if (colon && *colon != ':') {
			*why = "text after the IPv6 address's ']' is not :PORT";
			return -EINVAL;
		}
	} else {
		colon = memchr(text, ':', len);
		if (colon && memchr(colon + 1, ':', (size_t)(end - colon - 1))) {
			*why = "an IPv6 address needs brackets and a port: [::1]:4317";
			return -EINVAL;
		}
		n = colon ? (size_t)(colon - text) : len;
	}
	if (!n) {
		*why = "no host";
		return -EINVAL;
	}
	if (n >= hostlen) {
		*why = "the host name is too long";
		return -EINVAL;
	}
	memcpy(host, h, n);
	host[n] = 0;
	if (h != text) {
		struct in6_addr a6;

		if (inet_pton(AF_INET6, host, &a6) != 1) {
			*why = "not an IPv6 address between the brackets";
			return -EINVAL;
		}
	} else if (strspn(host, "0123456789.") == n) {
		struct in_addr a4;

		/* All digits and dots: an IPv4 address or nothing (not a host name to look up). */
		if (inet_pton(AF_INET, host, &a4) != 1) {
			*why = "not an IPv4 address";
			return -EINVAL;
		}
	} else if (!host_name_ok(host, n)) {
		*why = "a host name may hold only letters, digits, '-' and '.'";
		return -EINVAL;
	}
	if (colon && parse_port(colon + 1, (size_t)(end - colon - 1), port)) {
		*why = "the port is not a number from 1 to 65535";
		return -EINVAL;
	}
	if (!colon && port_required) {
		*why = "no :PORT";
		return -EINVAL;
	}
	return 0;
}

bool parse_has_control(const char *text)
{
	for (; *text; text++)
		if ((unsigned char)*text < 0x20 || *text == 0x7f)
			return true;
	return false;
}

static size_t escaped_len(const char *text, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += (unsigned char)text[i] < 0x20 || text[i] == 0x7f ? 4 : 1;
	return n;
}

/* Append text[0..len) escaped to buf at *at, keeping reserve bytes and the NUL free; false when it
 * did not fit. */
static bool escape_into(char *buf, size_t size, size_t reserve, size_t *at, const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		size_t need = c < 0x20 || c == 0x7f ? 4 : 1;

		if (*at + need + reserve + 1 > size)
			return false;
		if (need == 4)
			snprintf(buf + *at, 5, "\\x%02x", c);
		else
			buf[*at] = (char)c;
		*at += need;
	}
	return true;
}

/* End buf at at, with "..." when it was cut. */
static const char *escape_end(char *buf, size_t size, size_t at, bool fit)
{
	if (!size)
		return "";
	if (!fit)
		at += (size_t)snprintf(buf + at, size - at, "...");
	buf[at] = 0;
	return buf;
}

const char *parse_escape(const char *text, char *buf, size_t size)
{
	size_t at = 0, len = strlen(text);
	bool fit;

	if (size < 5)
		return escape_end(buf, size, 0, true);
	/* Room for "..." only when the whole does not fit. */
	fit = escape_into(buf, size, escaped_len(text, len) < size ? 0 : 3, &at, text, len);
	return escape_end(buf, size, at, fit);
}

const char *parse_redact_url(const char *url, char *buf, size_t size)
{
	const char *scheme = strstr(url, "://"), *authority = scheme ? scheme + 3 : url;
	/* Up to the last '@': a password may hold '@' or '/' unencoded, and hiding a path's part
	 * too costs nothing. */
	const char *user_end = strrchr(authority, '@'), *rest = user_end ? user_end : authority;
	size_t restlen = strcspn(rest, "?"), at = 0, reserve;
	bool fit;

	if (size < 5)
		return escape_end(buf, size, 0, true);
	reserve = escaped_len(url, (size_t)(authority - url)) + (user_end ? 3 : 0) + escaped_len(rest, restlen) +
				  (rest[restlen] ? 4 : 0) < size ? 0 : 3;
	fit = escape_into(buf, size, reserve, &at, url, (size_t)(authority - url)) &&
	      (!user_end || escape_into(buf, size, reserve, &at, "***", 3)) &&
	      escape_into(buf, size, reserve, &at, rest, restlen) &&
	      (!rest[restlen] || escape_into(buf, size, reserve, &at, "?***", 4));
	return escape_end(buf, size, at, fit);
}
