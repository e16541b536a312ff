#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Go stacks without CFI (suite go-stacks): a stripped and a full build of one program agree.

gostacks (tests/symbolizer/programs/go/gostacks) is built with cgo by Debian's Go 1.19
(/usr/lib/go/bin/go) and by Go 1.26 (scripts/go-toolchain.sh: /usr/local/go, or the toolchain module
from the Go module proxy, cached under /var/tmp), each in full (.debug_frame: the CFI unwinder) and
with -ldflags='-s -w' (no DWARF, no symbol table: Go's SP-delta table), all four running at once under
one daemon. A variant whose compiler cannot be had is skipped with a message; none at all: exit 77.

Stacks are compared by their Go frames (kernel frames dropped; a run of C frames is one <C>, as a
stripped build cannot name them). For each Go version:
- the workload's samples (leaf in main.* or C) of each build: >= 99% have a stack the other build
  shows too (frame for frame), and there are enough of them;
- main.main;main.worker;main.hashBlock keeps main.worker (the frameless leaf's caller) in >= 99% of
  the hashBlock samples, and those stacks end at runtime.goexit;
- main.inner is shown inlined in main.outer under main.middle and main.deep;
- the C samples are unwound by the C code's CFI up to the cgo switch (runtime.asmcgocall) in >= 95%,
  and the full build names spin_step there.
"""
import os
import shutil
import subprocess
import sys
import time

import bpftest
import gobuild

bpftest.require_bpf()
SOURCE = os.environ["GOSTACKS_SOURCE"]
TOOLCHAIN = os.environ["GO_TOOLCHAIN_SCRIPT"]
CACHE = os.environ.get("OTELPROFD_GOSTACKS_CACHE", "/var/tmp/otelprofd-gostacks")
AGREE = 0.99
out = bpftest.tmpdir()


def build(version, go):
    """{build: path} of the full and stripped binaries, built once per source and compiler."""
    where = gobuild.cache_dir(CACHE, go, SOURCE)
    # Names of 15 bytes at most: the folded output starts with the command name.
    paths = {kind: os.path.join(where, f"gs-{version}-{kind}") for kind in ("full", "strip")}
    for kind, path in paths.items():
        if not os.access(path, os.X_OK):
            gobuild.build(go, version, SOURCE, CACHE, path, ldflags=["-ldflags=-s -w"] if kind == "strip" else [])
    return paths


def normalize(stack):
    """(root, ..., leaf) of a folded stack without its command and kernel frames, C frames as one <C>."""
    frames = []
    for f in stack[1:]:
        if f.endswith("_[k]"):
            continue
        go = "." in f and "+0x" not in f and not f.startswith("[")
        name = f if go else "<C>"
        if name == "<C>" and frames and frames[-1] == "<C>":
            continue
        frames.append(name)
    return tuple(frames)


def workload(stack):
    return bool(stack) and (stack[-1].startswith("main.") or stack[-1] == "<C>")


go = gobuild.compilers(TOOLCHAIN)
if not go:
    bpftest.skip("no Go compiler: neither Debian's Go 1.19 nor Go 1.26")
binaries = {}
for version, path in go.items():
    for kind, binary in build(version, path).items():
        binaries[(version, kind)] = binary

procs = {key: subprocess.Popen([path, "60"], stdout=subprocess.DEVNULL) for key, path in binaries.items()}
try:
    time.sleep(1)
    folded = os.path.join(out, "go.folded")
    bpftest.run([bpftest.otelprofd(), "-p", ",".join(str(p.pid) for p in procs.values()), "-F", "499", "-d", "6s",
                 "-o", folded, "-v"])
finally:
    for p in procs.values():
        p.kill()
        p.wait()

by_build = {key: {} for key in binaries}
names = {os.path.basename(path)[:15]: key for key, path in binaries.items()}
for stack, count in bpftest.read_folded(folded).items():
    key = names.get(stack[0])
    if key:
        norm = normalize(stack)
        by_build[key][norm] = by_build[key].get(norm, 0) + count

failures = []
for version in go:
    full, strip = by_build[(version, "full")], by_build[(version, "strip")]
    for kind, mine, other in (("strip", strip, full), ("full", full, strip)):
        total = sum(c for s, c in mine.items() if workload(s))
        agree = sum(c for s, c in mine.items() if workload(s) and s in other)
        print(f"Go {version} {kind}: {agree} of {total} workload samples have a stack the other build shows")
        if total < 300 or agree < AGREE * total:
            failures.append(f"Go {version} {kind}: {agree} of {total} samples agree")
            for s, c in sorted(mine.items(), key=lambda x: -x[1]):
                if workload(s) and s not in other:
                    print(f"  only in {kind}: {c} {';'.join(s)}")
        hashing = sum(c for s, c in mine.items() if s and s[-1] == "main.hashBlock")
        kept = sum(c for s, c in mine.items() if s[-4:] == ("runtime.main", "main.main", "main.worker", "main.hashBlock")
                   and s[0] == "runtime.goexit")
        print(f"Go {version} {kind}: {kept} of {hashing} main.hashBlock samples read "
              "runtime.goexit;runtime.main;main.main;main.worker;main.hashBlock")
        if hashing < 50 or kept < AGREE * hashing:
            failures.append(f"Go {version} {kind}: main.worker kept in {kept} of {hashing} main.hashBlock samples")
        inlined = sum(c for s, c in mine.items() if s[-4:] == ("main.deep", "main.middle", "main.outer", "main.inner"))
        if not inlined:
            failures.append(f"Go {version} {kind}: main.inner never inlined in main.outer under main.middle")
        c_total = sum(c for s, c in mine.items() if s and s[-1] == "<C>")
        c_switch = sum(c for s, c in mine.items() if s == ("runtime.asmcgocall", "<C>"))
        print(f"Go {version} {kind}: {c_switch} of {c_total} C samples unwound to runtime.asmcgocall; "
              f"{inlined} with main.inner inlined")
        if c_total < 50 or c_switch < 0.95 * c_total:
            failures.append(f"Go {version} {kind}: {c_switch} of {c_total} C samples reach runtime.asmcgocall")
    named_c = sum(c for stack, c in bpftest.read_folded(folded).items()
                  if stack[0] == os.path.basename(binaries[(version, "full")])[:15] and "spin_step" in stack)
    if not named_c:
        failures.append(f"Go {version} full: spin_step never named in the cgo samples")
if failures:
    bpftest.fail("; ".join(failures))
print("PASS")
sys.exit(0)
