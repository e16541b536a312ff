#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configure (once) and build a meson build directory. Usage: build.sh DIR [meson setup options...]
set -euo pipefail
dir=$1
shift
if [ -f "$dir/build.ninja" ]; then
  meson configure "$dir" "$@" >/dev/null
else
  meson setup "$dir" "$@"
fi
ninja -C "$dir"
