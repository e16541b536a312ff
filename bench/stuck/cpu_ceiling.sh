#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The daemon's CPU under a tiny --max-cpu, for one or more builds in turn (issue 27: shedding in the
# kernel). Two busy programs (tests/workloads/heavy, one per CPU of a 2-CPU host) are profiled at
# 999 Hz under --max-cpu 0.25 for RUN_S seconds; the daemon's CPU (the run time of all its threads,
# and of its main thread, from /proc/PID/task/*/schedstat: ns, where clock ticks would be too coarse
# under 1%) is measured from its 3rd second to 1 s before its end, and its end-of-run lines say what
# was kept and shed.
# Usage: bench/stuck/cpu_ceiling.sh HEAVY_PROGRAM BUILD_DIR...   (as root; RUN_S=20 and MAX_CPU=0.25
# by default)
set -euo pipefail
heavy=$1
shift
run_s=${RUN_S:-20}
max_cpu=${MAX_CPU:-0.25}
tmp=$(mktemp -d /tmp/otelprofd-ceiling-XXXXXX)

all_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { print s }'; }
main_ns() { awk '{ print $1 }' "/proc/$1/task/$1/schedstat"; }

for build in "$@"; do
  "$heavy" $((run_s + 10)) & a=$!
  "$heavy" $((run_s + 10)) & b=$!
  sleep 0.5
  "$build/daemon/otelprofd" --pid "$a,$b" -F 999 -d "${run_s}s" --max-cpu "$max_cpu" -v -o "$tmp/out.folded" \
    2> "$tmp/log" & d=$!
  sleep 3
  t0=$(date +%s.%N); c0=$(all_ns $d); m0=$(main_ns $d)
  sleep $((run_s - 4))
  t1=$(date +%s.%N); c1=$(all_ns $d); m1=$(main_ns $d)
  wait $d || true
  kill $a $b 2>/dev/null || true
  wait $a $b 2>/dev/null || true
  echo "$build: $(echo "scale=3; 100 * ($c1 - $c0) / 1000000000 / ($t1 - $t0)" | bc)% of a CPU (all threads)," \
       "main thread $(echo "scale=3; 100 * ($m1 - $m0) / 1000000000 / ($t1 - $t0)" | bc)%," \
       "over $(echo "$t1 - $t0" | bc) s"
  grep -E "samples kept|CPU ceiling|loop:" "$tmp/log" | sed 's/^otelprofd: /  /'
done
rm -rf "$tmp"
