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
# Each input builds a trace table (~170 KiB): ASan's quarantine held to 64 MiB (fuzz-common.sh)
# keeps the freed ones from taking most of the RSS limit.
. "$(dirname "$0")/fuzz-common.sh"
# Inputs past a 64 KiB payload, a header and a whole record add nothing.
fuzz_run fuzz-process-ctx "$work" "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=512 -max_len=66200 "$@"
