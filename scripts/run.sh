#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Quick start: install what is needed, build, and profile this host for 10 seconds (or with the
# flags given), printing the top functions. Needs root (or CAP_BPF and CAP_PERFMON).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build >/dev/null
exec build/daemon/otelprofd "$@"
