// SPDX-License-Identifier: Apache-2.0
#include "demangle.h"

#include <libiberty/demangle.h>
#include <string.h>

char *sym_demangle(const char *name)
{
	char *out;

	if (!name || name[0] != '_' || strnlen(name, SYM_DEMANGLE_MAX_INPUT + 1) > SYM_DEMANGLE_MAX_INPUT)
		return NULL;
	/* Legacy Rust names are valid C++ names too: try Rust first so the hash is dropped. The
	 * recursion limit of libiberty stays on (no DMGL_NO_RECURSE_LIMIT) for hostile names. */
	if (name[1] == 'R' || name[1] == 'Z') {
		out = rust_demangle(name, DMGL_PARAMS | DMGL_ANSI);
		if (out)
			return out;
	}
	if (name[1] == 'Z' || (name[1] == '_' && name[2] == 'Z'))
		return cplus_demangle_v3(name, DMGL_PARAMS | DMGL_ANSI);
	return NULL;
}
