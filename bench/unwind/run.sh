#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# DWARF unwinding benchmark: installs perf, builds build-bench/ (release), runs bench/unwind/run.py
# and writes bench/unwind/RESULTS.md. Run as root on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/install-deps.sh
dpkg-query -W -f='${Status}' linux-perf 2>/dev/null | grep -q 'ok installed' ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends linux-perf
scripts/build.sh build-bench -Dbuildtype=release >/dev/null
/usr/bin/python3 bench/unwind/run.py --build build-bench "$@" > bench/unwind/RESULTS.md
cat bench/unwind/RESULTS.md
