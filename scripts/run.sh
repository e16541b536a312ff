#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Quick start: install what building and running need (not the test tools: scripts/test.sh installs
# those), build, and profile this host for 10 seconds (or with the flags given), printing the top
# functions. Needs root (or CAP_BPF and CAP_PERFMON).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --run
# A first build leaves the test suite out (its tools are not installed); a build directory that
# scripts/test.sh configured keeps its tests.
if [ -f build/build.ninja ]; then
  scripts/build.sh build >/dev/null
else
  scripts/build.sh build -Dtests=false >/dev/null
fi
exec build/daemon/otelprofd "$@"
