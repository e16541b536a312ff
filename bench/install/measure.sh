#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bare-machine install times (README.md beside this file): a minimal Debian 12 root made with
# debootstrap, copied twice; in one, scripts/install-deps.sh --run and the build scripts/run.sh does;
# in the other, scripts/install-deps.sh (everything scripts/test.sh needs). As root; needs
# debootstrap, network to deb.debian.org, about 5 GiB under DIR (default /var/tmp/otelprofd-bare).
# Usage: bench/install/measure.sh [DIR]
set -euo pipefail
tree=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(realpath -m "${1:-/var/tmp/otelprofd-bare}")
mkdir -p "$dir"
cd "$dir"

# Never leave /proc, /sys or /dev bound inside a root, and never delete through one.
unbind() {
  local k
  for k in run full; do
    mountpoint -q "$k/dev" && umount "$k/dev"
    mountpoint -q "$k/proc" && umount "$k/proc"
    mountpoint -q "$k/sys" && umount -R "$k/sys"
  done
  return 0
}
trap unbind EXIT
unbind

seconds() { echo "$(date +%s.%N) - $1" | bc | xargs printf '%.0f'; }

if [ ! -x base/usr/bin/apt-get ]; then
  start=$(date +%s.%N)
  debootstrap --variant=minbase bookworm base http://deb.debian.org/debian >debootstrap.log
  echo "debootstrap --variant=minbase bookworm: $(seconds "$start") s"
fi
# What a Debian 12 install has in its sources.list.
printf '%s\n' 'deb http://deb.debian.org/debian bookworm main' \
  'deb http://deb.debian.org/debian bookworm-updates main' \
  'deb http://deb.debian.org/debian-security bookworm-security main' >base/etc/apt/sources.list
cp /etc/resolv.conf base/etc/resolv.conf

for kind in run full; do
  if grep -q " $dir/$kind/" /proc/mounts; then
    echo "measure: something is still mounted under $dir/$kind" >&2
    exit 1
  fi
  rm -rf --one-file-system "$kind"
  cp -a base "$kind"
  mkdir -p "$kind/src"
  git -C "$tree" archive HEAD | tar -x -C "$kind/src"
  mount --bind /proc "$kind/proc"
  mount --rbind /sys "$kind/sys"
  mount --make-rslave "$kind/sys"
  mount --bind /dev "$kind/dev"
  arg=
  [ "$kind" = run ] && arg=--run
  start=$(date +%s.%N)
  chroot "$kind" /bin/bash -c "cd /src && scripts/install-deps.sh $arg" >"$kind.install.log" 2>&1
  echo "install-deps.sh $arg: $(seconds "$start") s, $(chroot "$kind" dpkg-query -W | wc -l) packages in the root"
  if [ "$kind" = run ]; then
    start=$(date +%s.%N)
    chroot "$kind" /bin/bash -c "cd /src && scripts/build.sh build -Dtests=false" >"$kind.build.log" 2>&1
    echo "build.sh build -Dtests=false: $(seconds "$start") s"
  fi
  unbind
done
