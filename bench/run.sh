#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every benchmark in one command: installs perf and bpftrace, builds a release tree in build-bench/,
# runs bench/run.py (options pass through, e.g. --runs 3 --skip scale) and writes bench/RESULTS.md.
# Run as root on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
for p in linux-perf bpftrace; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p"
done
scripts/build.sh build-bench -Dbuildtype=release >/dev/null
exec /usr/bin/python3 bench/run.py --build build-bench "$@"
