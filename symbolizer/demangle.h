/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Readable names from mangled symbol names: C++ (Itanium ABI) and Rust (legacy and v0), through
 * libiberty's demangler (whose files carry a linking exception).
 */
#ifndef OTELPROF_DEMANGLE_H
#define OTELPROF_DEMANGLE_H

/* Longest name handed to the demangler; longer names are kept as they are. */
#define SYM_DEMANGLE_MAX_INPUT 4096

/*
 * The demangled form of name (C++ with parameter types, Rust without the hash), malloc'ed and
 * owned by the caller; NULL when name is not mangled, cannot be demangled or is too long.
 */
char *sym_demangle(const char *name);

#endif
