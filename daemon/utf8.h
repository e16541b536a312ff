/* SPDX-License-Identifier: Apache-2.0 */
/*
 * UTF-8 checks for the strings otelprofd sends: protobuf string fields must be UTF-8, and a
 * receiver that checks (the Collector, protoc) refuses the whole message for one bad string.
 */
#ifndef OTELPROFD_UTF8_H
#define OTELPROFD_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* How many bytes of s[0 .. len) are well-formed UTF-8 from the start (no overlong forms,
 * surrogates, or code points past U+10FFFF; a sequence cut by len is not). */
size_t utf8_valid_prefix(const char *s, size_t len);
/* s[0 .. len) is well-formed UTF-8. */
bool utf8_valid(const char *s, size_t len);
/* Replace, in place, each byte that starts no well-formed sequence with '?': how many were. */
size_t utf8_repair(char *s, size_t len);

#endif
