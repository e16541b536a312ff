#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the OpenTelemetry Collector of the test suite (tests/collector: Collector v0.165.0, pdata
# v1.71.0, from the Go module proxy) once per machine and prints the binary's path on stdout.
# The binary, the module cache and the build cache live under /var/tmp/otelprofd-collector; the
# binary is named by a hash of go.mod, go.sum and the sources, so a change builds a new one and an
# unchanged tree reuses it (a fraction of a second). What it does goes to stderr.
#
# Go: the modules need Go 1.26. It takes the first of $GO, go on PATH, /usr/local/go/bin/go,
# /usr/lib/go-1.*/bin/go that is 1.26 or later; else the first that is 1.21 or later, with
# GOTOOLCHAIN set so that it fetches the Go 1.26 toolchain from the Go module proxy; else (a bare
# Debian 12 has Go 1.19 only) it installs golang-1.23-go from bookworm-backports (as root) and
# does the same with it.
set -euo pipefail
src=$(cd "$(dirname "$0")/../tests/collector" && pwd)
root=${OTELPROFD_COLLECTOR_CACHE:-/var/tmp/otelprofd-collector}
need_minor=26 # go.mod's go line: 1.26.0
toolchain=go1.26.0

say() { echo "build-collector: $*" >&2; }

key=$(cd "$src" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-16)
bin=$root/otelcol-otelprofd-$key
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$root"
exec 9>"$root/lock"
flock 9 # one build at a time; a second caller waits for it and reuses its binary
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

go_minor() { # prints N of go1.N for the Go at $1, nothing if it does not run
  "$1" env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p'
}

find_go() { # $1: least minor version; prints the path of the first Go that has it
  local g m
  for g in ${GO:-} "$(command -v go || true)" /usr/local/go/bin/go /usr/lib/go-1.*/bin/go; do
    [ -n "$g" ] && [ -x "$g" ] || continue
    m=$(GOTOOLCHAIN=local go_minor "$g")
    if [ -n "$m" ] && [ "$m" -ge "$1" ]; then
      echo "$g"
      return 0
    fi
  done
  return 1
}

export GOMODCACHE=$root/gomod GOCACHE=$root/gocache GOFLAGS=-mod=readonly
if go=$(find_go $need_minor); then
  export GOTOOLCHAIN=local
  say "using $go ($(GOTOOLCHAIN=local "$go" env GOVERSION))"
else
  if ! go=$(find_go 21); then
    if [ "$(id -u)" -ne 0 ]; then
      say "no Go 1.21 or later here, and installing one needs root" && exit 1
    fi
    say "no Go 1.21 or later here: installing golang-1.23-go from bookworm-backports"
    echo "deb http://deb.debian.org/debian bookworm-backports main" >/etc/apt/sources.list.d/otelprofd-backports.list
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -t bookworm-backports golang-1.23-go >&2
    go=/usr/lib/go-1.23/bin/go
  fi
  # Debian's Go sets GOTOOLCHAIN=local in its go.env; the environment wins over it.
  export GOTOOLCHAIN=$toolchain
  say "using $go ($(GOTOOLCHAIN=local "$go" env GOVERSION)) with GOTOOLCHAIN=$toolchain (fetched from the Go module proxy)"
fi

say "building the Collector into $bin (first time on this machine: a few minutes)"
start=$(date +%s)
(cd "$src" && "$go" build -trimpath -o "$bin.tmp" .)
mv "$bin.tmp" "$bin"
say "built in $(($(date +%s) - start)) s"
# The binaries of other trees (another checkout, an older commit): the three newest are kept.
ls -t "$root"/otelcol-otelprofd-* | grep -v '\.tmp$' | tail -n +4 | xargs -r rm -f
echo "$bin"
