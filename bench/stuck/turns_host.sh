#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The event loop's longest turn host-wide (issue 27: signals and the deadline looked at at least every
# 100 ms): otelprofd -F 99 --off-cpu over the whole host for 16 s, exporting to the test collector
# every 5 s (so three intervals' profiles are built during the run), RUNS times per build; each run's
# "loop:" line (otelprofd -v) says its longest turn, and in builds that time them where that turn's
# time went and how long all the turns took.
# Usage: bench/stuck/turns_host.sh BUILD_DIR...   (as root; RUNS=2 by default; each BUILD_DIR needs
# tests/otlp/test-collector; NICE=N runs otelprofd at that nice value). Builds that time them also say
# what compile units' first lookups took and kallsyms' reads on their thread.
set -euo pipefail
tmp=$(mktemp -d /tmp/otelprofd-turns-host-XXXXXX)
collector=
trap '[ -n "$collector" ] && kill "$collector" 2>/dev/null; rm -rf "$tmp"' EXIT

for build in "$@"; do
  for run in $(seq "${RUNS:-2}"); do
    rm -f "$tmp/ports"
    "$build/tests/otlp/test-collector" --out "$tmp/collector" --ports-file "$tmp/ports" > /dev/null 2>&1 &
    collector=$!
    for _ in $(seq 100); do [ -s "$tmp/ports" ] && break; sleep 0.1; done
    port=$(grep -o '[0-9]*' "$tmp/ports" | head -1)
    ${NICE:+nice -n "$NICE"} "$build/daemon/otelprofd" -F 99 -d 16s --off-cpu -v --endpoint "127.0.0.1:$port" \
      --insecure --export-interval 5s 2> "$tmp/log" || true
    kill "$collector" 2>/dev/null || true
    wait "$collector" 2>/dev/null || true
    collector=
    echo "$build run $run: $(grep -o 'the longest turn took .*' "$tmp/log" || echo 'no loop line');" \
         "$(grep -o '[0-9]* requests sent' "$tmp/log" || true); load $(cut -d' ' -f1 /proc/loadavg)"
    # Builds that time them: compile units' first lookups, and kallsyms read on its thread.
    grep -o 'compile units: .*\|reads on the reader.s thread .*' "$tmp/log" | sed 's/^/  /' || true
  done
done
