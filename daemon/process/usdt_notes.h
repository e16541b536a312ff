/* SPDX-License-Identifier: Apache-2.0 */
/*
 * USDT probes of a foreign ELF file: whether its .note.stapsdt section (SystemTap SDT notes, version 3)
 * names a probe of a provider. Bounded (USDT_NOTES_MAX notes read), survives malformed files; the
 * caller owns the fd.
 */
#ifndef OTELPROFD_USDT_NOTES_H
#define OTELPROFD_USDT_NOTES_H

#include <stdbool.h>

#define USDT_NOTES_MAX 65536

/* The ELF file open at fd defines a probe of this provider ("otel_memory"). */
bool usdt_notes_have_provider(int fd, const char *provider);

#endif
