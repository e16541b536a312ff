// SPDX-License-Identifier: Apache-2.0
#include "jvm_names.h"

#include <stdbool.h>
#include <string.h>

/* A character of a Java type or qualified name as HotSpot prints it (generics are not printed). */
static bool java_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
	       c == '.' || c == '[' || c == ']' || c == '<' || c == '>' || (unsigned char)c >= 0x80;
}

void jvm_names_method(char *name)
{
	char *space = strchr(name, ' '), *open, *end = name + strlen(name), *p;
	bool dot = false;

	if (!space || space == name || end == name || end[-1] != ')' || !(open = strchr(space, '(')))
		return;
	for (p = name; p < space; p++)
		if (!java_char(*p))
			return;
	for (p = space + 1; p < open; p++) {
		if (!java_char(*p))
			return;
		dot |= *p == '.';
	}
	if (!dot || open == space + 1 || memchr(open + 1, '(', (size_t)(end - open - 1)))
		return;
	memmove(name, space + 1, (size_t)(open - space - 1));
	name[open - space - 1] = 0;
}
