#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The event loop's longest turn (issue 27: signals and the deadline looked at at least every 100 ms):
# the busy program with large DWARF (tests/workloads/heavy: 8.6 MiB inflated, within the default
# 128 MiB --symbol-cache, so its first sample opens it in full) profiled at 99 Hz for 4 s, RUNS times
# per build; each run's "loop:" line (otelprofd -v) says its longest turn and its turns over 100 ms,
# the module cache line what its opens took.
# Usage: bench/stuck/turns.sh HEAVY_PROGRAM BUILD_DIR...   (as root; RUNS=3 by default; LOAD=N busy
# processes beside it, none by default; OFF_CPU=1 adds --off-cpu; NICE=N runs otelprofd at that nice value)
set -euo pipefail
heavy=$1
shift
tmp=$(mktemp -d /tmp/otelprofd-turns-XXXXXX)
busy=()
for _ in $(seq "${LOAD:-0}"); do
  (while :; do :; done) & busy+=($!)
done
trap 'kill "${busy[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT

for build in "$@"; do
  for run in $(seq "${RUNS:-3}"); do
    "$heavy" 30 & w=$!
    sleep 0.3
    ${NICE:+nice -n "$NICE"} "$build/daemon/otelprofd" --pid "$w" -F 99 -d 4s -v ${OFF_CPU:+--off-cpu} -o "$tmp/out.folded" \
      2> "$tmp/log" || true
    kill "$w" 2>/dev/null || true
    wait "$w" 2>/dev/null || true
    # The longest turn (and, in builds that time them, its CPU time, its phases and how long all the
    # turns took), then the module cache's opens.
    echo "$build run $run: $(grep -o 'the longest turn took .*' "$tmp/log" || echo 'no loop line');" \
         "$(grep -o 'opens took .*' "$tmp/log" || true); load $(cut -d' ' -f1 /proc/loadavg)"
    grep -o 'compile units: .*' "$tmp/log" | sed 's/^/  /' || true
  done
done
