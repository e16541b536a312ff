#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Generates the seeds (gen-ctx-seeds.py) and runs the process context fuzzer on them.
# Usage: run-fuzz-ctx.sh FUZZER SECONDS [extra libFuzzer flags]
# A longer run from a build directory: tests/fuzz/run-fuzz-ctx.sh build/tests/fuzz/fuzz-process-ctx 3600
set -euo pipefail
fuzzer=$1 seconds=$2
shift 2
work=$(mktemp -d /tmp/otelprof-fuzz-ctx.XXXXXX)
python3 "$(dirname "$0")/gen-ctx-seeds.py" "$work/corpus"
# ASan's quarantine held to 64 MiB (as run-fuzz.sh): each input builds a trace table (~170 KiB), and
# the default 256 MiB of freed memory kept would take most of the RSS limit.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}:quarantine_size_mb=64
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# Inputs past a 64 KiB payload, a header and a whole record add nothing.
if "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=512 -timeout=10 -max_len=66200 \
    -artifact_prefix="$work/" "$@" "$work/corpus"; then
  rm -rf "$work"
else
  rc=$?
  echo "fuzz-process-ctx failed ($rc): the crashing input is in $work" >&2
  exit "$rc"
fi
