// SPDX-License-Identifier: Apache-2.0
#include "utf8.h"

#include <stdint.h>

size_t utf8_valid_prefix(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;

	for (size_t i = 0; i < len;) {
		unsigned c = s[i], n;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return i;
		if (len - i <= n)
			return i;
		for (unsigned k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return i;
		i += n + 1;
	}
	return len;
}

bool utf8_valid(const char *s, size_t len)
{
	return utf8_valid_prefix(s, len) == len;
}

size_t utf8_repair(char *s, size_t len)
{
	size_t repaired = 0;

	for (size_t i = utf8_valid_prefix(s, len); i < len; i += utf8_valid_prefix(s + i, len - i)) {
		s[i++] = '?';
		repaired++;
	}
	return repaired;
}
