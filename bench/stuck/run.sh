#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 27's reproduction, for one build: the busy program with large compressed debug info
# (tests/workloads/gen-heavy.py, built by the tests as BUILD/tests/workloads/heavy) profiled at 99 Hz
# with --symbol-cache 16MiB.
#   1. a 5 s run (-d 5s): its wall time, CPU, module opens and drops (otelprofd -v);
#   2. a run until SIGTERM, sent after 4 s: how long the daemon takes to exit, and the profile written.
# Usage: bench/stuck/run.sh BUILD_DIR [HEAVY_PROGRAM]   (as root; each run ends when the daemon does,
# at most when the program does: 100 s and 200 s)
set -euo pipefail
build=$1
heavy=${2:-$build/tests/workloads/heavy}
daemon=$build/daemon/otelprofd
tmp=$(mktemp -d /tmp/otelprofd-stuck-XXXXXX)

"$heavy" 100 & pid=$!
sleep 0.5
/usr/bin/time -f "5 s run: wall %e s, cpu %U+%S s" "$daemon" --pid "$pid" -F 99 -d 5s --symbol-cache 16MiB -v \
  -o "$tmp/run.folded" 2> "$tmp/run.log" || true
grep -E "samples kept|modules loaded|module cache:|Unwound|5 s run" "$tmp/run.log" | sed 's/^otelprofd: //'
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true

"$heavy" 200 & pid=$!
sleep 0.5
"$daemon" --pid "$pid" -F 99 -d 120s --symbol-cache 16MiB -o "$tmp/term.folded" 2> "$tmp/term.log" & d=$!
sleep 4
t0=$(date +%s.%N)
kill -TERM "$d"
wait "$d" || true
t1=$(date +%s.%N)
echo "SIGTERM: exited $(echo "$t1 - $t0" | bc) s after it; profile $(wc -c < "$tmp/term.folded") bytes"
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
rm -rf "$tmp"
