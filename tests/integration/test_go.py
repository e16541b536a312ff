#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A stripped Go program profiled by otelprofd with its BPF programs (suite bpf).

gohot built with -ldflags='-s -w' (no symbol table, no DWARF: only .gopclntab) runs main.hotLoop on
its main goroutine and main.outer (main.inner inlined) and main.hotLoop on a worker goroutine.
- pprof: at least 80% of its samples have their leaf in main.hotLoop, main.outer or main.inner; the
  hot loop's line of gohot.go is named; main.inner appears inlined in main.outer at its call line;
  at least 95% of the samples in main.* end at runtime.goexit (where Go's traceback ends), none
  [truncated].
- OTLP: those frames are of type go, and the mapping carries process.executable.build_id.go with
  the binary's Go build id (go tool buildid).
"""
import json
import os
import re
import subprocess
import time

import bpftest
import pprofdecode

bpftest.require_bpf()
GOHOT = os.environ["GO_WORKLOAD"]
SOURCE = os.environ["GO_SOURCE"]
out = bpftest.tmpdir()


def markers():
    with open(SOURCE) as f:
        return {m.group(1): n for n, text in enumerate(f, 1) for m in [re.search(r"// LINE:(\w+)", text)] if m}


def pprof_stacks(path):
    """[(count, [[(function, file, line) innermost first] per location, leaf first])]."""
    return [(count, locs) for count, locs, _ in pprofdecode.stacks(path)]


marks = markers()
build_id = subprocess.run([os.environ.get("GO", "go"), "tool", "buildid", GOHOT], capture_output=True, text=True,
                          check=True, env=dict(os.environ, GOTOOLCHAIN="local")).stdout.strip()
work = subprocess.Popen([GOHOT, "60"], stdout=subprocess.DEVNULL)
try:
    time.sleep(0.5)
    pb = os.path.join(out, "go.pb.gz")
    otlp = os.path.join(out, "go.otlp")
    run = bpftest.run([bpftest.otelprofd(), "--pid", str(work.pid), "-F", "499", "-d", "3s", "-o", pb])
    bpftest.run([bpftest.otelprofd(), "--pid", str(work.pid), "-F", "499", "-d", "2s", "-o", otlp])
finally:
    work.kill()
    work.wait()

stacks = pprof_stacks(pb)
total = sum(c for c, _ in stacks)
hot_names = {"main.hotLoop", "main.outer", "main.inner"}
in_main = [(c, locs) for c, locs in stacks if locs and locs[0] and locs[0][0][0] in hot_names]
hot = sum(c for c, _ in in_main)
if total < 300 or hot < 0.8 * total:
    bpftest.fail(f"{hot} of {total} samples in the workload's hot functions")
named_line = sum(c for c, locs in in_main
                 if locs[0][0][0] == "main.hotLoop" and locs[0][0][2] == marks["hot"] and locs[0][0][1] == SOURCE)
if named_line < 0.1 * hot:
    bpftest.fail(f"only {named_line} samples at main.hotLoop {SOURCE}:{marks['hot']}")
inlined = sum(c for c, locs in in_main if len(locs[0]) >= 2 and locs[0][0][0] == "main.inner" and
              locs[0][1][0] == "main.outer" and locs[0][1][2] == marks["call"])
if not inlined:
    bpftest.fail("main.inner never shown inlined in main.outer at its call line")
ended = sum(c for c, locs in in_main if locs[-1] and locs[-1][-1][0] == "runtime.goexit")
truncated = sum(c for c, locs in in_main if any(loc and loc[0][0] == "[truncated]" for loc in locs))
if ended < 0.95 * hot or truncated:
    roots = {}
    for c, locs in in_main:
        roots[locs[-1][-1][0] if locs[-1] else "?"] = roots.get(locs[-1][-1][0] if locs[-1] else "?", 0) + c
    bpftest.fail(f"{ended} of {hot} samples end at runtime.goexit, {truncated} truncated; roots {roots}")

summaries = [json.loads(line) for line in subprocess.run(
    [os.environ["OTLP_DUMP"], otlp], stdout=subprocess.PIPE, text=True, check=True).stdout.splitlines()]
go_types = other = 0
for s in summaries:
    for r in s.get("resources", []):
        for scope in r["scopes"]:
            for prof in scope["profiles"]:
                for smp in prof["sample_list"]:
                    for name, ftype in zip(smp["stack"], smp["frame_types"]):
                        if name.startswith("main."):
                            go_types += ftype == "go"
                            other += ftype != "go"
if not go_types or other:
    bpftest.fail(f"main.* frames: {go_types} of type go, {other} of another type")
raw = open(otlp, "rb").read()
if b"process.executable.build_id.go" not in raw or build_id.encode() not in raw:
    bpftest.fail(f"the OTLP output lacks process.executable.build_id.go {build_id}")
print(f"{hot} of {total} samples in main.*, {named_line} at main.hotLoop line {marks['hot']}, {inlined} inlined, "
      f"{ended} ending at runtime.goexit; {go_types} main.* frames of type go; Go build id {build_id}")
print("PASS")
