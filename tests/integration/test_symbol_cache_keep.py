#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small symbol cache keeps an exited process's frames named (issue 30).

otelprofd -- sh -c 'reuse-x 1500; heavy 3' with --symbol-cache 4MiB: reuse-x burns in reuse_x_hot()
and exits; then heavy, whose module alone is larger than the cache, evicts reuse-x's modules. The
profile is built at the end, long after reuse-x exited: /proc/PID/map_files and /proc/PID/root no
longer reach its files, and its modules come back only through the files the cache kept open when it
evicted them (symbolizer_modules.c). Before, 0 of ~150 reuse-x samples were named here (pid-reuse
failed the same way in CI beside a JVM test at a 32 MiB cache). Only the program and its children
are sampled, so what the cache holds does not depend on what else the host runs."""
import os
import re
import subprocess

import bpftest
import pprofdecode

bpftest.require_bpf()
X = os.environ["REUSE_X_WORKLOAD"]
HEAVY = os.environ["HEAVY_WORKLOAD"]
out = bpftest.tmpdir()
pprof = os.path.join(out, "keep.pb.gz")
env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}

cmd = [bpftest.otelprofd(), "-F", "499", "-v", "--symbol-cache", "4MiB", "-o", pprof,
       "--", "/bin/sh", "-c", f"{X} 1500; {HEAVY} 3"]
print("$", " ".join(cmd), flush=True)
p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=150)
log = p.stderr
print("\n".join(line for line in log.splitlines() if "debug: libbpf" not in line)[-3000:])
if p.returncode != 0:
    bpftest.fail(f"otelprofd exited {p.returncode}")

# The premise: reuse-x's modules left the cache and came back through their kept files.
cache = re.search(r"module cache: .* (\d+) evicted to make room, .* (\d+) opened again through their kept file "
                  r"\((\d+) files kept now, (\d+) not kept\)", log)
if not cache:
    bpftest.fail("no module cache line in the -v log")
evicted, reopened, _, not_kept = map(int, cache.groups())
print(f"evicted to make room: {evicted}, opened again through a kept file: {reopened}, not kept: {not_kept}")
if evicted < 1 or reopened < 1:
    bpftest.fail("reuse-x's modules were not evicted and opened again: the test proves nothing")
if not_kept:
    bpftest.fail(f"{not_kept} evicted modules' files not kept (a bound of 256, 4 files here)")

named = unnamed = 0
for labels, names, value in pprofdecode.samples(pprof, frames=True):
    if labels.get("process.executable.name") != "reuse-x":
        continue
    if "reuse_x_hot" in names:
        named += value
    elif any(n and n.startswith("reuse-x+0x") for n in names):
        unnamed += value  # a frame of reuse-x's own file left as an offset
print(f"reuse-x samples: {named} in reuse_x_hot, {unnamed} with reuse-x frames unnamed")
if named < 10:
    bpftest.fail(f"only {named} reuse-x samples named reuse_x_hot ({unnamed} unnamed)")
if unnamed > named // 20:
    bpftest.fail(f"{unnamed} reuse-x samples with unnamed frames of its own file against {named} named")
print("PASS")
