#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The attached cost of --alloc, build A against build B (issue 28 item 5): the probes' share made
large by a small mean. Each round starts bench/tree (B's) twice, waiting, each preloading its own
build's library at mean MEAN bytes and pinned to one of the two CPUs (swapped every round), attaches
each build's `otelprofd --alloc --pid` to its own, then lets both run at once (the same load from the
rest of the machine on both). Prints the programs' CPU (user + system: the traps and BPF programs
run in it) and each daemon's own on_alloc and on_free ns per run (kernel.bpf_stats_enabled, found by
the program ids the daemon holds open).
Usage: bench/alloc/before_after.py BUILD_A BUILD_B ROUNDS MEAN TREES (as root)."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

if len(sys.argv) != 6:
    sys.exit(__doc__)
A, B, rounds, mean, trees = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
tree = f"{B}/bench/tree"
def progs(pid):
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            ids.update(int(l.split()[1]) for l in open(f"/proc/{pid}/fdinfo/{fd}") if l.startswith("prog_id:"))
        except OSError: pass
    out = json.loads(subprocess.run(["bpftool", "--json", "prog", "show"], capture_output=True, text=True).stdout)
    return {p["name"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0)) for p in out if p["id"] in ids and p["name"] in ("on_alloc", "on_free")}
res = {A: [], B: []}
out_dir = tempfile.mkdtemp(prefix="alloc-ab-")
open("/proc/sys/kernel/bpf_stats_enabled", "w").write("1")
for r in range(rounds):
    ds, ws = {}, {}
    for i, b in enumerate((A, B)):
        lib = f"{b}/alloc/libotelprofd-alloc.so"
        cpu = (r + i) % 2
        w = subprocess.Popen([tree, "16", trees, "wait"], env=dict(os.environ, LD_PRELOAD=lib, OTELPROFD_ALLOC_SAMPLE=mean),
                             preexec_fn=lambda cpu=cpu: os.sched_setaffinity(0, {cpu}), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        assert w.stdout.readline().strip() == "ready"
        d = subprocess.Popen([f"{b}/daemon/otelprofd", "--alloc", "-d", "0", "--pid", str(w.pid), "-o", os.path.join(out_dir, f"{i}.pb.gz")],
                             env=dict(os.environ, OTELPROFD_ALLOC_LIB=lib), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        while "Profiling" not in d.stderr.readline(): pass
        ds[b], ws[b] = d, w
    for b in (A, B):
        ws[b].stdin.write("go\n"); ws[b].stdin.close()
    cpu = {}
    for b in (A, B):
        out = ws[b].stdout.read(); ws[b].wait()
        line = next(x for x in out.splitlines() if x[:1].isdigit())
        cpu[b] = float(line.split()[3])
    time.sleep(2)
    for b in (A, B):
        d = ds[b]
        p = progs(d.pid)
        d.send_signal(2); d.communicate()
        res[b].append((cpu[b], p))
        print(f"round {r+1} {b}: cpu {cpu[b]:.3f} s, " + ", ".join(f"{k} {v[1]} runs {v[0]/max(v[1],1):.0f} ns" for k, v in p.items()), flush=True)
for b in (A, B):
    print(b, "median cpu", statistics.median(x[0] for x in res[b]),
          "on_alloc ns", statistics.median(x[1]["on_alloc"][0] / x[1]["on_alloc"][1] for x in res[b]),
          "on_free ns", statistics.median(x[1]["on_free"][0] / x[1]["on_free"][1] for x in res[b]))
print("B/A cpu ratio per round:", [f"{x[0]/y[0]:.3f}" for x, y in zip(res[B], res[A])])
