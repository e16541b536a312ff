#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs a test program with libotelprofd-alloc.so preloaded before jemalloc (LD_PRELOAD=OURS:JEMALLOC):
# the library's real functions (dlsym(RTLD_NEXT)) are then jemalloc's, and every block it samples,
# moves or frees is jemalloc's. Usage: over-jemalloc.sh LIB PROGRAM [ARGS]. Skipped (77) without
# Debian's libjemalloc2.
lib=$1
shift
for j in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib64/libjemalloc.so.2 /usr/lib/libjemalloc.so.2; do
	if [ -e "$j" ]; then
		LD_PRELOAD="$lib:$j" "$@" || exit
		# The blocks were jemalloc's: its own statistics call answers in the same process.
		LD_PRELOAD="$lib:$j" MALLOC_CONF=stats_print:true "$@" 2>&1 | grep -q "jemalloc statistics" && exit 0
		echo "jemalloc did not serve the program's allocations" >&2
		exit 1
	fi
done
echo "libjemalloc.so.2 is not installed (Debian's libjemalloc2): skipped"
exit 77
