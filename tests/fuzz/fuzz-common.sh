# SPDX-License-Identifier: Apache-2.0
# What the fuzz runners share (sourced by run-fuzz*.sh): the sanitizers' options, and a run whose
# work directory is removed when it passes and kept, with the crashing input, when it fails.

# ASan's quarantine of freed memory (256 MiB by default) is held to 64 MiB, so that a run's RSS
# limit (-rss_limit_mb) measures the target and not what ASan keeps.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}:quarantine_size_mb=64
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# fuzz_run NAME WORK FUZZER [libFuzzer flags...]: FUZZER on the corpus WORK/corpus, crashes written
# to WORK; exits with the fuzzer's status, naming WORK, when it fails.
fuzz_run() {
  local name=$1 work=$2 fuzzer=$3 rc
  shift 3
  if "$fuzzer" -timeout=10 -artifact_prefix="$work/" "$@" "$work/corpus"; then
    rm -rf "$work"
  else
    rc=$?
    echo "$name failed ($rc): the crashing input is in $work" >&2
    exit "$rc"
  fi
}
