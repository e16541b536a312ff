#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Seeds (a folded file; a pprof, raw and gzipped) and a run of the diff readers' fuzzer on them.
# Usage: run-fuzz-diff.sh FUZZER SECONDS [extra libFuzzer flags]
set -euo pipefail
fuzzer=$1 seconds=$2
shift 2
work=$(mktemp -d /tmp/otelprof-fuzz-diff.XXXXXX)
mkdir "$work/corpus"
python3 - "$work/corpus" <<'PY'
import gzip, sys
d = sys.argv[1]
open(f"{d}/folded", "wb").write(b"\x01app;main;hot 60\napp;main;sys_read_[k] 5\napp;main;inl_[i] 3\n")
def s(b): return bytes([0x32, len(b)]) + b
# sample_type {1, 2}; strings "", samples, count, process_name, app, f, /bin/app; function, mapping,
# location (mapping 1, one line), and a sample (location 1, value 7, label process_name=app).
prof = (bytes([0x0a, 4, 0x08, 1, 0x10, 2]) + s(b"") + s(b"samples") + s(b"count") + s(b"process_name") +
        s(b"app") + s(b"f") + s(b"/bin/app") + bytes([0x2a, 4, 0x08, 1, 0x10, 5]) +
        bytes([0x1a, 6, 0x08, 1, 0x10, 0x80, 0x20, 0x18]) + bytes([0x22, 8, 0x08, 1, 0x10, 1, 0x22, 2, 0x08, 1]) +
        bytes([0x12, 10, 0x0a, 1, 1, 0x12, 1, 7, 0x1a, 4, 0x08, 3, 0x10, 4]))
open(f"{d}/pprof", "wb").write(b"\x00" + prof)
open(f"{d}/pprof.gz", "wb").write(b"\x02" + gzip.compress(prof))
PY
. "$(dirname "$0")/fuzz-common.sh"
fuzz_run fuzz-diff "$work" "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=1024 -max_len=65536 "$@"
