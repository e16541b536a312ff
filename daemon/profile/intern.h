/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interning of byte strings to dense ids 0, 1, 2, ... in order of first appearance. Keys are copied
 * and owned by the table; intern_key() returns a pointer that stays valid until intern_free().
 * Bounded by max_keys: interning past it fails with -ENOSPC.
 */
#ifndef OTELPROFD_INTERN_H
#define OTELPROFD_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct intern;

struct intern *intern_new(size_t max_keys);
void intern_free(struct intern *t);

/* Id of key (added when new; *added tells which, may be NULL), or -ENOSPC / -ENOMEM. */
int64_t intern_put(struct intern *t, const void *key, size_t len, int *added);
/* Id of key, or -ENOENT. */
int64_t intern_find(const struct intern *t, const void *key, size_t len);
size_t intern_count(const struct intern *t);
const void *intern_key(const struct intern *t, uint32_t id, size_t *len);

#endif
