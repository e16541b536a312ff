#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""--memory-limit below what the daemon needs besides its symbol cache (issue 30 item 2).

otelprofd --memory-limit 8MiB -- heavy 5: the daemon alone is over 8 MiB resident (BPF maps, the ring
buffer, its binary and libraries), so each check (one a second) finds the limit that cannot be kept:
the symbol cache goes to its floor (16 MiB: a module's share 8), heavy's module (8.6 MiB of DWARF
once inflated) is served by its ELF symbols, the warning is said once, the checks over the limit are counted, and nothing
loops: the run ends on time, its modules are opened a few times at most, its CPU stays small, and
heavy's samples keep their function names."""
import os
import re
import subprocess
import time

import bpftest
import pprofdecode

bpftest.require_bpf()
HEAVY = os.environ["HEAVY_WORKLOAD"]
out = bpftest.tmpdir()
pprof = os.path.join(out, "limit.pb.gz")
env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
SECONDS = 5

cmd = [bpftest.otelprofd(), "-F", "499", "-v", "--memory-limit", "8MiB", "-o", pprof, "--", HEAVY, str(SECONDS)]
print("$", " ".join(cmd), flush=True)
start = time.monotonic()
p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
try:
    _, log = p.communicate(timeout=120)
except subprocess.TimeoutExpired:
    p.kill()
    p.communicate()
    bpftest.fail("otelprofd did not end within 120 s of a 5 s program")
wall = time.monotonic() - start
usage = os.wait4(p.pid, os.WNOHANG)[2] if p.returncode is None else None
print("\n".join(line for line in log.splitlines() if "debug: libbpf" not in line)[-3000:])
if p.returncode != 0:
    bpftest.fail(f"otelprofd exited {p.returncode}")

said = [line for line in log.splitlines() if "The memory limit (8.0 MiB) is not kept" in line]
if len(said) != 1:
    bpftest.fail(f"the limit that cannot be kept was said {len(said)} times, not once")
m = re.search(r"memory limit 8\.0 MiB: (\d+) of (\d+) checks over it \(([\d.]+) MiB resident at the last\); "
              r"symbol cache kept under ([\d.]+) MiB", log)
if not m:
    bpftest.fail("no memory limit line in the -v log")
over, checks, rss, bound = int(m.group(1)), int(m.group(2)), float(m.group(3)), float(m.group(4))
print(f"checks over the limit: {over} of {checks}; {rss} MiB resident at the last; cache bound {bound} MiB")
if checks < SECONDS - 2 or over != checks:
    bpftest.fail(f"{over} of {checks} checks over an 8 MiB limit in a {SECONDS} s run")
if bound != 16.0:
    bpftest.fail(f"the symbol cache was kept under {bound} MiB, not its floor (16 MiB)")

# No thrash: a handful of modules (heavy, libc, the loader, the vDSO), each opened a few times at most.
cache = re.search(r"module cache: (\d+) opened with debug info, (\d+) with ELF symbols only", log)
if not cache:
    bpftest.fail("no module cache line in the -v log")
opens = int(cache.group(1)) + int(cache.group(2))
print(f"module opens: {opens}; run {wall:.1f} s")
if opens > 20:
    bpftest.fail(f"{opens} module opens in a {SECONDS} s run of one program: the cache thrashes")
if wall > SECONDS + 60:
    bpftest.fail(f"the run took {wall:.0f} s for a {SECONDS} s program")

named = unnamed = 0
for labels, leaf, value in pprofdecode.samples(pprof):
    if labels.get("process.executable.name") != "heavy":
        continue
    if leaf and (leaf.startswith("heavy_f") or leaf == "main"):
        named += value
    else:
        unnamed += value
print(f"heavy's samples: {named} with a heavy_f* or main leaf, {unnamed} other")
if named < 100:
    bpftest.fail(f"only {named} of heavy's samples named")
if unnamed > named // 10:
    bpftest.fail(f"{unnamed} of heavy's samples unnamed against {named} named")
print("PASS")
