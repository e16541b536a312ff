#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every build and test dependency of otelprofd from Debian 12's packages.
# Unattended and idempotent: safe to run again; does nothing when all is present.
set -euo pipefail

packages=(
  build-essential meson ninja-build pkg-config
  clang llvm libclang-rt-14-dev bpftool libbpf-dev libelf-dev libdw-dev libdebuginfod-dev libiberty-dev zlib1g-dev
  protobuf-c-compiler libprotobuf-c-dev protobuf-compiler
  libgrpc-dev libcurl4-openssl-dev libjson-c-dev libsystemd-dev
  python3 python3-yaml systemd man-db chromium
  libcmocka-dev rustc golang-go openjdk-17-jdk-headless curl
  openssl socat ca-certificates util-linux xz-utils binutils elfutils
  debhelper dpkg-dev fakeroot lintian git
  debootstrap systemd-container
)

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
