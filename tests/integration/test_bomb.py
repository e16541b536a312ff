#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Decompression bombs against the real daemon (issue 14): two CPU burners whose DWARF is a bomb
(tests/symbolizer/gen-bomb.py: four .debug_* sections over one zlib stream claiming 1008 MiB each,
~1 MB on disk), one carrying it, one reaching it through .gnu_debuglink (the debug file beside it).
Before the bound, the daemon inflated 4 GiB per file and stalled. Now: otelprofd's peak RSS stays
small, the run ends on time, few samples are dropped, the refusal is counted in the end-of-run log,
and the hot function is still named (from the ELF symbol table)."""
import os
import re
import subprocess
import time

import bpftest

DURATION = 5
MAX_RSS_KIB = 300 << 10
MAX_SECONDS = DURATION + 15  # BPF load and the final symbolization, on two busy shared cores

bpftest.require_bpf()
bombs = os.environ["BOMB_DIR"]
out = bpftest.tmpdir()
folded = os.path.join(out, "bomb.folded")

workloads = [subprocess.Popen([os.path.join(bombs, name), str(DURATION + 10)])
             for name in ("spin-bomb", "spin-bomb-link")]
try:
    time.sleep(0.3)  # both exec'd and mapped
    pids = ",".join(str(w.pid) for w in workloads)
    start = time.monotonic()
    p = bpftest.run(["/usr/bin/time", "-f", "maxrss_kib=%M", bpftest.otelprofd(), "--pid", pids, "-F", "99",
                     "-d", f"{DURATION}s", "-v", "-o", folded], timeout=120)
    elapsed = time.monotonic() - start
finally:
    for w in workloads:
        w.kill()
        w.wait()

log = p.stderr
rss = int(re.search(r"maxrss_kib=(\d+)", log).group(1))
kept_dropped = re.search(r"(\d+) samples kept, (\d+) dropped", log)
refused = re.search(r"(\d+) binaries or debug files not inflated", log)
stacks = bpftest.read_folded(folded)
by_comm = {}
for stack, count in stacks.items():
    if "bomb_spin" in stack:
        by_comm[stack[0]] = by_comm.get(stack[0], 0) + count
print(f"otelprofd: peak RSS {rss >> 10} MiB, {elapsed:.1f} s, samples kept/dropped "
      f"{kept_dropped.groups() if kept_dropped else None}, refused {refused.group(1) if refused else None}, "
      f"bomb_spin samples by program {by_comm}")
if rss > MAX_RSS_KIB:
    bpftest.fail(f"otelprofd's peak RSS {rss >> 10} MiB is over {MAX_RSS_KIB >> 10} MiB")
if elapsed > MAX_SECONDS:
    bpftest.fail(f"a {DURATION} s run took {elapsed:.1f} s")
if not kept_dropped:
    bpftest.fail("no end-of-run sample counts in the log")
kept, dropped = int(kept_dropped.group(1)), int(kept_dropped.group(2))
# The two shared cores are busy with other work too: a quarter of one CPU's samples at least.
if kept < DURATION * 99 / 4 or dropped > kept / 100:
    bpftest.fail(f"{kept} samples kept, {dropped} dropped")
if not refused or int(refused.group(1)) < 2:
    bpftest.fail("the bombs' refusal (the binary and the debug file) is not counted in the log")
# Comm is the program's name, cut to 15 characters by the kernel.
if len(by_comm) != 2 or min(by_comm.values()) < DURATION * 99 / 10:
    bpftest.fail(f"bomb_spin is not named in both programs' samples: {by_comm}")
print("PASS")
