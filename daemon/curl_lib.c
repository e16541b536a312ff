// SPDX-License-Identifier: Apache-2.0
#include "curl_lib.h"

DL_LIB_DEFINE(curl_lib, CURL_LIB_ENTRY_POINTS, CURL_LIB_SONAME, CURL_LIB_PACKAGE);

int curl_lib_load(char *why, size_t why_size)
{
	return dl_lib_load(&curl_lib_dl, why, why_size);
}

bool curl_lib_loaded(void)
{
	return dl_lib_loaded(&curl_lib_dl);
}
