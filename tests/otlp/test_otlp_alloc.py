#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""End to end, allocations over OTLP: otelprofd --alloc attached (--pid, --follow-children) to the
allocation workload (tests/workloads/allocs.c) preloading libotelprofd-alloc.so at a 16 KiB mean,
exporting to the test collector over gRPC every second; every request passes the checker. Asserted
on what the collector received, decoded with otlp-dump:

- the workload's resources carry pprof's heap types as Profiles of their own, in order after the
  CPU one: alloc_objects/count, alloc_space/bytes, inuse_objects/count, inuse_space/bytes, one value
  per sample (no timestamps, no period);
- alloc_space of each site, summed over the intervals, within 10% of what the workload counted;
- the last interval of the parent holds, in inuse_space, the leaked sites (within 15%) and no other.
"""
import os
import subprocess

import bpftest
import otlptest

bpftest.require_bpf()
out = bpftest.tmpdir()
MEAN = 16384
SITES = ("leak_small", "leak_big", "churn_free", "grow_realloc", "thread_site")
HEAP = [("alloc_objects", "count"), ("alloc_space", "bytes"), ("inuse_objects", "count"), ("inuse_space", "bytes")]
lib = os.environ["ALLOC_LIB"]
collector = otlptest.Collector(os.path.join(out, "collector"))
workload = subprocess.Popen([os.environ["ALLOCS_WORKLOAD"], "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=dict(os.environ, LD_PRELOAD=lib, OTELPROFD_ALLOC_SAMPLE=str(MEAN)))
cmd = [bpftest.otelprofd(), "--pid", str(workload.pid), "--follow-children", "--alloc", "--ringbuf-size", "64MiB",
       "--endpoint", f"127.0.0.1:{collector.grpc_port}", "--insecure", "--export-interval", "1s", "--duration", "60s"]
print("$", " ".join(cmd), flush=True)
daemon = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=dict(os.environ, OTELPROFD_ALLOC_LIB=lib))
try:
    log = bpftest.wait_profiling(daemon)
    workload.stdin.write("go\n")
    workload.stdin.flush()
    truth = {}
    for line in workload.communicate(timeout=120)[0].splitlines():
        site, allocated, held = line.split()
        truth[site] = (int(allocated), int(held))
    # Its last interval exported, then the end of the run.
    daemon.send_signal(15)
    log += daemon.communicate(timeout=120)[1]
finally:
    for p in (workload, daemon):
        if p.poll() is None:
            p.kill()
            p.wait()
mine = otlptest.received(daemon, log, collector, workload.pid)
alloc_space = {}
last_inuse = None
for r in mine:
    profiles = r["scopes"][0]["profiles"]
    types = [(p["sample_type"], p["sample_unit"]) for p in profiles]
    heap = [t for t in types if t in HEAP]
    if heap != [t for t in HEAP if t in heap] or types[len(types) - len(heap):] != heap:
        bpftest.fail(f"profiles of a resource, in order: {types}")
    for p in profiles:
        if (p["sample_type"], p["sample_unit"]) not in HEAP:
            continue
        if p["period_type"] or p["period"]:
            bpftest.fail(f"a heap profile with a period: {p['period_type']} {p['period']}")
        for s in p["sample_list"]:
            if s["timestamps"] or s["values"] != 1 or s["value_sum"] <= 0:
                bpftest.fail(f"a heap sample is not one value: {s}")
        if p["sample_type"] == "alloc_space":
            for s in p["sample_list"]:
                for site in SITES:
                    if site in s["stack"]:
                        alloc_space[site] = alloc_space.get(site, 0) + s["value_sum"]
        if p["sample_type"] == "inuse_space":
            last_inuse = p["sample_list"]
for site in SITES:
    got, want = alloc_space.get(site, 0), truth[site][0]
    print(f"alloc_space {site}: {got} against {want} ({100 * abs(got - want) / want:.1f}%)")
    if abs(got - want) > 0.10 * want:
        bpftest.fail(f"alloc_space of {site} more than 10% off")
if last_inuse is None:
    bpftest.fail("no inuse_space Profile of the workload")
for site in SITES:
    got = sum(s["value_sum"] for s in last_inuse if site in s["stack"])
    held = truth[site][1]
    print(f"inuse_space {site}: {got} against {held}")
    if (held and abs(got - held) > 0.15 * held) or (not held and got):
        bpftest.fail(f"inuse_space of {site} is not what it held at its exit")
print("PASS")
