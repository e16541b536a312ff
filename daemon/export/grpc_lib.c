// SPDX-License-Identifier: Apache-2.0
#include "export/grpc_lib.h"

DL_LIB_DEFINE(grpc_lib, GRPC_LIB_ENTRY_POINTS, GRPC_LIB_SONAME, GRPC_LIB_PACKAGE);

int grpc_lib_load(char *why, size_t why_size)
{
	return dl_lib_load(&grpc_lib_dl, why, why_size);
}

bool grpc_lib_present(void)
{
	return dl_lib_present(&grpc_lib_dl);
}
