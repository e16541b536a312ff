#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The screenshots of docs/flamegraph.md (docs/images/flame-*.png), from real runs over the test
# workloads: the page, a search, the off-CPU view, and a diff. Needs root, a build in build/ and
# chromium. Usage: scripts/flamegraph-screenshots.sh [OUTDIR]  (default docs/images)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/images}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
bin=build/daemon/otelprofd
wl=build/tests/workloads
mkdir -p "$out"

shoot() { # PAGE[#FRAGMENT] PNG
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --user-data-dir="$work/chromium" \
    --window-size=1280,760 --screenshot="$2" "file://$1" 2>/dev/null
}

# One run: split (hot_a/hot_b/hot_c), deep-cxx (a deep C++ stack), waits (threads that wait).
"$wl/split" 8 & split=$!
"$wl/deep-cxx" 8 & deep=$!
(sleep 1; echo go) | "$wl/waits" 6 > /dev/null & waits=$!
"$bin" --pid "$split,$deep,$waits" --off-cpu --off-cpu-probability 1 -F 499 -d 4s -q -o "$work/profile.html"
shoot "$work/profile.html" "$out/flame-graph.png"
shoot "$work/profile.html#search=hot_" "$out/flame-search.png"
shoot "$work/profile.html#view=1" "$out/flame-off-cpu.png"
wait

# A diff: the same split workload, then with deep-cxx beside it.
"$wl/split" 4 & a=$!
"$bin" --pid "$a" -F 499 -d 3s -q -o "$work/base.pb.gz"
wait
"$wl/split" 4 & a=$!
"$wl/deep-cxx" 4 & b=$!
"$bin" --pid "$a,$b" -F 499 -d 3s -q -o "$work/new.pb.gz"
wait
"$bin" diff "$work/base.pb.gz" "$work/new.pb.gz" -o "$work/diff.html"
shoot "$work/diff.html" "$out/flame-diff.png"
ls -la "$out"/flame-*.png
