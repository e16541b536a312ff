#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install what is needed, build with gcc and with clang (ASan + UBSan), and run every test.
# The BPF tests load the real programs: run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The OpenTelemetry Collector of suite collector, from the Go module proxy: built once per machine
# (a few minutes), then reused from /var/tmp/otelprofd-collector.
scripts/build-collector.sh >/dev/null

echo "== gcc build: every suite"
scripts/build.sh build -Dtests=true # a build directory that scripts/run.sh made has no tests
meson test -C build --print-errorlogs --num-processes 2

# The sanitizers check our C code: suites that test something else (the Debian package, built with
# gcc from the source, alone and under systemd in a container; the HTML page in a browser; the docs' commands, whose code paths the other
# suites cover) run once, above, which keeps the whole run under 20 minutes.
echo "== clang build with AddressSanitizer and UndefinedBehaviorSanitizer: every suite but package, systemd, html, docs"
CC=clang scripts/build.sh build-asan -Dtests=true -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
# intercept_tls_get_addr=0: clang 14's runtime (up to LLVM 16) takes a dynamic TLS block (gRPC's,
# OpenSSL's, dlopen'ed) at page offset 16 for a glibc 2.19 header and records a garbage range, which
# the leak checker's tracer then scans and dies on at exit ("Tracer caught signal 11"), after a test
# passed. Since glibc 2.25 those blocks are malloc'd and reachable anyway.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --print-errorlogs --num-processes 2 --no-suite package --no-suite systemd --no-suite html --no-suite docs
