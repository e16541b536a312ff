#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vDSO frames, named and unwound, with the real sampler (suite unwind-bpf).

tests/workloads/clocks.c, built with -O2 -fomit-frame-pointer, reads the clock in tight loops:
main -> clock_loop -> read_monotonic -> clock_gettime and main -> tod_loop -> read_tod ->
gettimeofday, both answered by the vDSO without entering the kernel. The [vdso] mapping has no
file: otelprofd serves it with its own vDSO's image (the same for every process of one kernel).
- Most samples end in the vDSO, and each of __vdso_clock_gettime and __vdso_gettimeofday is the
  leaf of at least 20% of them (the vDSO's global names, not their weak aliases).
- At least 95% of the samples whose leaf is a vDSO function keep their caller chain from main
  (main;clock_loop;read_monotonic;...;__vdso_clock_gettime, main;tod_loop;read_tod;...;
  __vdso_gettimeofday): the vDSO's .eh_frame unwinds them, there are no frame pointers to follow.
- At most 1% of the process's user frames are unnamed (before: every vDSO frame, [unknown]+0x7f...).
"""
import os
import re
import subprocess
import time

import bpftest

bpftest.require_bpf()
clocks = os.environ["CLOCKS_WORKLOAD"]
out = bpftest.tmpdir()
failures = []
UNNAMED = re.compile(r"^(\[unknown\]|(0x)?[0-9a-f]{6,}$)")  # "[unknown]+0x7f..." in folded output
CHAINS = {"__vdso_clock_gettime": ["main", "clock_loop", "read_monotonic"],
          "__vdso_gettimeofday": ["main", "tod_loop", "read_tod"]}


def user_frames(stack):
    return [f for f in stack[1:] if not f.endswith("_[k]")]


def keeps_chain(frames, leaf):
    """frames (root first) end at leaf and hold its caller chain, in order, below it."""
    if not frames or frames[-1] != leaf or "main" not in frames:
        return False
    tail = frames[frames.index("main"):]
    want = CHAINS[leaf]
    return tail[:len(want)] == want


proc = subprocess.Popen([clocks, "60"], stdout=subprocess.DEVNULL)
stacks = {}
try:
    time.sleep(0.3)
    for attempt in range(3):
        folded = os.path.join(out, f"clocks-{attempt}.folded")
        bpftest.run([bpftest.otelprofd(), "--pid", str(proc.pid), "--frequency", "499", "--duration", "3s",
                     "-o", folded, "-v"])
        for stack, n in bpftest.read_folded(folded).items():
            stacks[stack] = stacks.get(stack, 0) + n
        if sum(stacks.values()) >= 600:
            break
        print(f"{sum(stacks.values())} samples so far (a loaded machine): again", flush=True)
finally:
    proc.kill()
    proc.wait()

total = sum(stacks.values())
leaves = {leaf: 0 for leaf in CHAINS}
chained = {leaf: 0 for leaf in CHAINS}
frames_seen = bare = 0
for stack, n in stacks.items():
    frames = user_frames(stack)
    frames_seen += n * len(frames)
    bare += n * sum(1 for f in frames if UNNAMED.match(f))
    if frames and frames[-1] in leaves:
        leaves[frames[-1]] += n
        chained[frames[-1]] += n * keeps_chain(frames, frames[-1])
in_vdso = sum(leaves.values())
for stack, n in sorted(stacks.items(), key=lambda kv: -kv[1])[:6]:
    print(f"{n:6d} {';'.join(stack)}")
print(f"{total} samples, {in_vdso} with a vDSO leaf {leaves}, with their caller chain {chained}; "
      f"{bare} of {frames_seen} user frames unnamed")
if total < 300:
    failures.append(f"only {total} samples")
if in_vdso < 0.5 * total:
    failures.append(f"{in_vdso} of {total} samples end in a named vDSO function")
for leaf in CHAINS:
    if leaves[leaf] < 0.2 * total:
        failures.append(f"{leaves[leaf]} of {total} samples end in {leaf}")
    if chained[leaf] < 0.95 * leaves[leaf]:
        failures.append(f"{chained[leaf]} of {leaves[leaf]} samples in {leaf} keep main -> {' -> '.join(CHAINS[leaf][1:])}")
if bare > 0.01 * frames_seen:
    failures.append(f"{bare} of {frames_seen} user frames are unnamed")
if failures:
    bpftest.fail("; ".join(failures))
print("PASS")
