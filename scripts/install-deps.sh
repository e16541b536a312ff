#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs otelprofd's dependencies from Debian 12's packages.
#   install-deps.sh          everything: building, running and the whole test suite (scripts/test.sh)
#   install-deps.sh --run    building and running only (scripts/run.sh): no test tools
# Unattended and idempotent: safe to run again; does nothing when all is present.
# Bare-machine times of each: docs/how-it-works.md ("Build").
set -euo pipefail

# Building the daemon and its BPF programs, and running it.
run_packages=(
  build-essential meson ninja-build pkg-config python3
  clang bpftool libbpf-dev libelf-dev libdw-dev libdebuginfod-dev libiberty-dev zlib1g-dev
  protobuf-c-compiler libprotobuf-c-dev
  libgrpc-dev libcurl4-openssl-dev libjson-c-dev ca-certificates
)
# The test suite only: sanitizers, test programs in other languages, the HTML page's browser,
# the Debian package's tools, the Collector suite's Go (scripts/build-collector.sh needs 1.26).
# jemalloc: libotelprofd-alloc.so over another allocator (tests/alloc/over-jemalloc.sh).
test_packages=(
  llvm libclang-rt-14-dev protobuf-compiler libcmocka-dev
  python3-yaml systemd man-db chromium
  rustc golang-go openjdk-17-jdk-headless curl
  openssl socat util-linux xz-utils binutils elfutils
  debhelper dpkg-dev fakeroot lintian git
  debootstrap systemd-container
  libjemalloc2
)

case "${1:-}" in
  --run) packages=("${run_packages[@]}") ;;
  "") packages=("${run_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: $0 [--run]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root (or with sudo)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
