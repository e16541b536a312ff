#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds a seed corpus from the symbolizer's test programs and runs the ELF/DWARF fuzzer on it.
# Usage: run-fuzz.sh FUZZER PROGRAMS_DIR SECONDS [extra libFuzzer flags]
# A longer run (one hour, keeping the corpus) from a build directory:
#   tests/fuzz/run-fuzz.sh build/tests/fuzz/fuzz-elf build/tests/symbolizer 3600
set -euo pipefail
fuzzer=$1 programs=$2 seconds=$3
shift 3
work=$(mktemp -d /tmp/otelprof-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
corpus=$work/corpus
mkdir -p "$corpus"
for p in inl-pie inl-nopie libplug.so cxx; do
  cp "$programs/$p" "$corpus/$p"
  objcopy --only-keep-debug "$programs/$p" "$corpus/$p.debug"
  objcopy --compress-debug-sections=zlib "$programs/$p" "$corpus/$p.zlib"
  strip --strip-all -o "$corpus/$p.stripped" "$programs/$p"
  head -c 4096 "$programs/$p" > "$corpus/$p.head"
done
# Decompression bombs (tests/symbolizer/gen-bomb.py): refused before inflating, or the RSS limit
# below fails the run.
cp "$programs/spin-bomb" "$programs/spin-noise" "$corpus/"
# Stripped Go programs (built where golang-go is installed): the .gopclntab parser, its inline trees
# and the Go build id note, under 1 MiB (-max_len) each.
for p in gohot-stripped gohot-pie; do
  if [ -f "$programs/$p" ]; then cp "$programs/$p" "$corpus/$p"; fi
done
# With ASan's quarantine held to 64 MiB (fuzz-common.sh) a 40 s run peaks at ~185 MiB, well under
# 512 MiB, while one inflated bomb section alone (1008 MiB, over -malloc_limit_mb, which follows
# the RSS limit) fails the run.
. "$(dirname "$0")/fuzz-common.sh"
exec "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=512 -timeout=10 -max_len=1048576 \
  -artifact_prefix="$work/" "$@" "$corpus"
