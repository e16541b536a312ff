#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measure OTLP encoding on a real profile of this host: the split workload plus a compiler and a
# file-system walk for stack variety, sampled system-wide. Usage (root): bench/otlp/run.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
scripts/build.sh "$build" >/dev/null
"$build/tests/workloads/split" 30 & split=$!
( while :; do find /usr -xdev -name '*.h' >/dev/null 2>&1; done ) & walker=$!
( while :; do cc -O2 -c daemon/profile/profile.c -Idaemon -Ibpf -Isymbolizer -o /dev/null 2>/dev/null; done ) & compiler=$!
trap 'kill $split $walker $compiler 2>/dev/null || true' EXIT
for hz in 99 999; do
  echo "== 10 s, every process, $hz Hz"
  "$build/bench/otlp/otlp-bench" 10 "$hz" 50
done
