#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""End to end, off-CPU over OTLP: otelprofd --off-cpu (every switch-out sampled) profiles the waits
workload (tests/workloads/waits.c) with the real BPF programs and exports to the test collector over
gRPC every second; every request passes the checker (the collector's and otlp-dump's, which holds an
off_cpu Profile's samples to a value per timestamp). Asserted on what the collector received,
decoded with otlp-dump:

- each of the workload's resources has its on-CPU Profile first, as without --off-cpu (samples/count,
  period cpu/nanoseconds, 1e9 / frequency; timestamps only), and a second Profile of its waits
  (off_cpu/nanoseconds, no period; one value per timestamp);
- the computing functions lead the on-CPU samples; the waiting functions (wait_sleep, wait_pipe,
  wait_mutex) are in the off-CPU Profile, whose samples carry the sample attributes;
- the values are nanoseconds: wait_sleep's, wait_pipe's and wait_mutex's waits through their blocking
  call add up to what the workload timed around each call, within 10% (as test off-cpu-bpf does
  with the folded file).
"""
import os
import subprocess

import bpftest
import otlptest

bpftest.require_bpf()
out = bpftest.tmpdir()
SECONDS = 4
FREQUENCY = 199
collector = otlptest.Collector(os.path.join(out, "collector"))
# The workload waits for a line on stdin, so the daemon is attached before the first wait.
workload = subprocess.Popen([os.environ["WAITS_WORKLOAD"], str(SECONDS)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
cmd = [bpftest.otelprofd(), "--pid", str(workload.pid), "-F", str(FREQUENCY), "--off-cpu",
       "--off-cpu-probability", "1", "--endpoint", f"127.0.0.1:{collector.grpc_port}", "--insecure",
       "--export-interval", "1s", "--duration", f"{SECONDS + 3}s"]
print("$", " ".join(cmd), flush=True)
daemon = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
try:
    log = bpftest.wait_profiling(daemon)
    workload.stdin.write("go\n")
    workload.stdin.flush()
    measured = {}
    for line in workload.communicate(timeout=60)[0].splitlines():
        name, ns = line.split()
        measured[name] = int(ns)
    log += daemon.communicate(timeout=120)[1]
finally:
    for p in (workload, daemon):
        if p.poll() is None:
            p.kill()
            p.wait()
mine = otlptest.received(daemon, log, collector, workload.pid)
on_cpu, off_cpu = [], []
both = 0
for r in mine:
    if len(r["scopes"]) != 1 or r["scopes"][0]["name"] != "otelprofd":
        bpftest.fail(f"scopes {r['scopes']}")
    profiles = r["scopes"][0]["profiles"]
    types = [(p["sample_type"], p["sample_unit"]) for p in profiles]
    # A process that only waited in an interval (before "go") has no on-CPU Profile in it.
    if types not in ([("samples", "count"), ("off_cpu", "nanoseconds")], [("samples", "count")],
                     [("off_cpu", "nanoseconds")]):
        bpftest.fail(f"profiles of a resource, in order: {types}")
    both += len(profiles) == 2
    for p in profiles:
        if p["sample_type"] == "samples":
            if (p["period_type"], p["period_unit"], p["period"]) != ("cpu", "nanoseconds", 10**9 // FREQUENCY):
                bpftest.fail(f"on-CPU profile period {p['period_type']}/{p['period_unit']} {p['period']}")
            on_cpu.extend(p["sample_list"])
        else:
            if p["period_type"] or p["period"]:
                bpftest.fail(f"off-CPU profile with a period: {p['period_type']} {p['period']}")
            off_cpu.extend(p["sample_list"])
# The workload runs 4 s of the 1 s intervals, computing all along.
if both < SECONDS - 1:
    bpftest.fail(f"only {both} resources of the workload have both Profiles")

for s in on_cpu:
    if s["values"] or s["timestamps"] != s["count"] or not s["count"]:
        bpftest.fail(f"an on-CPU sample is not timestamps only: {s}")
on_leaf = {}
for s in on_cpu:
    leaf = s["stack"][0] if s["stack"] else ""
    on_leaf[leaf] = on_leaf.get(leaf, 0) + s["count"]
on_total = sum(on_leaf.values())
computing = on_leaf.get("compute_only", 0) + on_leaf.get("compute_locked", 0)
print(f"on-CPU: {on_total} samples, {computing} in compute_only and compute_locked")
if on_total < 100 or computing < 0.5 * on_total:
    bpftest.fail(f"on-CPU: {computing} of {on_total} samples in the computing functions")

for s in off_cpu:
    if s["values"] != s["timestamps"] or not s["values"] or s["value_sum"] < 0:
        bpftest.fail(f"an off-CPU sample without a value per timestamp: {s}")
    a = s["attributes"]
    if not isinstance(a.get("thread.id"), int) or "thread.name" not in a or "cpu.logical_number" not in a:
        bpftest.fail(f"off-CPU sample attributes {a}")
waits = sum(s["count"] for s in off_cpu)
print(f"off-CPU: {len(off_cpu)} samples, {waits} waits, {sum(s['value_sum'] for s in off_cpu) / 1e9:.2f} s")
functions = {f for s in off_cpu for f in s["stack"]}
missing = {"wait_sleep", "wait_pipe", "wait_mutex"} - functions
if missing:
    bpftest.fail(f"waiting functions missing from the off-CPU Profile: {sorted(missing)}")

# Each function's waits through its blocking call's kernel path, in nanoseconds.
blocking = {"wait_sleep": "nanosleep", "wait_pipe": "pipe_read", "wait_mutex": "futex"}
for name, ns in measured.items():
    got = sum(s["value_sum"] for s in off_cpu if name in s["stack"] and
              any(blocking[name] in f for f, t in zip(s["stack"], s["frame_types"]) if t == "kernel"))
    print(f"{name}: {got / 1e6:.1f} ms off CPU in OTLP, the workload measured {ns / 1e6:.1f} ms")
    if ns < 500e6:
        bpftest.fail(f"{name}: the workload waited only {ns / 1e6:.1f} ms")
    if abs(got - ns) > 0.10 * ns:
        bpftest.fail(f"{name}: {got / 1e6:.1f} ms off CPU, not within 10% of the measured {ns / 1e6:.1f} ms")
print("PASS")
