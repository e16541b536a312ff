#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The daemon's CPU under a tiny --max-cpu, for one or more builds in turn (issue 27: shedding in the
# kernel). Two busy programs (tests/workloads/heavy, one per CPU of a 2-CPU host) are profiled at
# 999 Hz under --max-cpu 0.25 for RUN_S seconds; the daemon's CPU (all its threads: utime + stime of
# /proc/PID/stat, and its main thread's run time from /proc/PID/task/PID/schedstat) is measured from
# its 3rd second to its end, and its end-of-run line says what was kept and shed.
# Usage: bench/stuck/cpu_ceiling.sh HEAVY_PROGRAM BUILD_DIR...   (as root; RUN_S=20 by default)
set -euo pipefail
heavy=$1
shift
run_s=${RUN_S:-20}
tmp=$(mktemp -d /tmp/otelprofd-ceiling-XXXXXX)
hz=$(getconf CLK_TCK)

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
main_ns() { awk '{ print $1 }' "/proc/$1/task/$1/schedstat"; }

for build in "$@"; do
  "$heavy" $((run_s + 10)) & a=$!
  "$heavy" $((run_s + 10)) & b=$!
  sleep 0.5
  "$build/daemon/otelprofd" --pid "$a,$b" -F 999 -d "${run_s}s" --max-cpu 0.25 -o "$tmp/out.folded" \
    2> "$tmp/log" & d=$!
  sleep 3
  t0=$(date +%s.%N); c0=$(cpu_ticks $d); m0=$(main_ns $d)
  sleep $((run_s - 4))
  t1=$(date +%s.%N); c1=$(cpu_ticks $d); m1=$(main_ns $d)
  wait $d || true
  kill $a $b 2>/dev/null || true
  wait $a $b 2>/dev/null || true
  echo "$build: $(echo "scale=3; 100 * ($c1 - $c0) / $hz / ($t1 - $t0)" | bc)% of a CPU (all threads)," \
       "main thread $(echo "scale=3; 100 * ($m1 - $m0) / 1000000000 / ($t1 - $t0)" | bc)%," \
       "over $(echo "$t1 - $t0" | bc) s"
  grep -E "samples kept|CPU ceiling" "$tmp/log" | sed 's/^otelprofd: /  /'
done
rm -rf "$tmp"
