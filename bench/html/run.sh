#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The HTML flame graph of a large profile, opened by headless Chromium: the time from navigation to
# the first drawn graph (the page writes it on <body data-load-ms>: performance.now() after its first
# render, so it includes reading and parsing the file), its script's share (data-render-ms, of which
# JSON.parse data-parse-ms, and data-timing-ms by step), and chromium's whole run (wall and CPU).
# Usage: bench/html/run.sh [BUILD_DIR] [STACKS] [RUNS] [SHARED]   (defaults: build 100000 5 0;
# SHARED: see gen_stacks.py, 0 the worst case, 0.97 the sharing of a real profile)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build} stacks=${2:-100000} runs=${3:-5} shared=${4:-0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 bench/html/gen_stacks.py "$stacks" "$work/big.folded" "$shared"
"$build/bench/html/folded-to-html" "$work/big.folded" "$work/big.html"
echo "page: $(stat -c %s "$work/big.html") bytes"
for i in $(seq "$runs"); do
  # Chromium's whole run (start-up, load, render, serializing the DOM): wall and CPU seconds.
  attrs=$(/usr/bin/time -f "%e %U %S" -o "$work/time" chromium --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$work/profile" --window-size=1280,900 --dump-dom "file://$work/big.html" 2>/dev/null |
    grep -o '<body[^>]*>')
  read -r wall user sys < "$work/time"
  echo "run $i: $attrs chromium wall ${wall} s, cpu $(echo "$user + $sys" | bc) s"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
