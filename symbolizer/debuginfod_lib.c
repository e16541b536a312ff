// SPDX-License-Identifier: Apache-2.0
#include "debuginfod_lib.h"

DL_LIB_DEFINE(debuginfod_lib, DEBUGINFOD_LIB_ENTRY_POINTS, DEBUGINFOD_LIB_SONAME, DEBUGINFOD_LIB_PACKAGE);

int debuginfod_lib_load(void)
{
	return dl_lib_load(&debuginfod_lib_dl, NULL, 0);
}

const char *debuginfod_lib_error(void)
{
	return dl_lib_error(&debuginfod_lib_dl);
}
