#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every sampled allocation is in the profile or in a counter (issue 28): short threaded programs
(tests/workloads/alloc-count.c) preloading a copy of libotelprofd-alloc.so with every allocation
sampled (OTELPROFD_ALLOC_SAMPLE=1: each one's alloc_objects is 1), one after another and three at
once, in a cgroup a daemon profiles with --cgroup, and one outside it on the same file. Each program
prints the library's own count of the allocations it sampled (the probes it fired). Then:

- the pprof profile's alloc_objects, summed, plus the daemon's counted drops (ring buffer full,
  scratch busy, the aggregate's bounds, put off with the process gone since, sent and not read at
  the end) equal the library's count over the programs in the cgroup, exactly;
- the probes that ran in other processes are the outside program's sampled allocations, exactly;
- run twice: as it is, and with every module open 300 ms late (on purpose), so the first
  programs' stacks are put off to a later turn and their processes have exited when they come back
  (they were dropped without an allocation counter before: in the profile now, until their
  process's interval ends, as any other allocation it held at its exit), their stacks as whole as
  the others' (work() in at least 95% of them).
"""
import os
import re
import shutil
import signal
import subprocess
import time

import bpftest
import cgrouptest
import pprofdecode

bpftest.require_bpf()
workload = os.environ["ALLOC_COUNT_WORKLOAD"]
out = bpftest.tmpdir()
# A private copy: the daemon's probes are on the file, so no other process on the machine fires them.
lib = os.path.join(out, "libotelprofd-alloc-count.so")
shutil.copy(os.environ["ALLOC_LIB"], lib)
preload = dict(os.environ, LD_PRELOAD=lib, OTELPROFD_ALLOC_SAMPLE="1")


def counted(stdout, who):
    m = re.fullmatch(r"sampled (\d+) dropped (\d+) freed (\d+)\n", stdout)
    if not m:
        bpftest.fail(f"{who} printed {stdout!r}")
    return int(m.group(1)), int(m.group(2))


def number(log, pattern):
    m = re.search(pattern, log)
    if not m:
        bpftest.fail(f"no '{pattern}' in the daemon's log")
    return int(m.group(1))


def run(name, extra_env, n):
    """n: allocations per thread of the programs in the cgroup."""
    tree = cgrouptest.Tree(cgrouptest.v2_root())
    pprof = os.path.join(out, name + ".pb.gz")
    inside = outside = 0
    try:
        cg = tree.make(f"otelprofd-alloc-count-{os.getpid()}/in")
        cmd = [bpftest.otelprofd(), "--alloc", "--cgroup", f"/otelprofd-alloc-count-{os.getpid()}", "-v",
               "--ringbuf-size", "64MiB", "--duration", "300s", "-o", pprof]
        print("$", " ".join(cmd), flush=True)
        d = subprocess.Popen(cmd, env=dict(os.environ, OTELPROFD_ALLOC_LIB=lib, **extra_env),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        log = bpftest.wait_profiling(d)
        rest = bpftest.drain(d)

        def enter():
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write("0")
        out_p = subprocess.Popen([workload, "1000", "2"], env=preload, stdout=subprocess.PIPE, text=True)
        batches = [[(n, 1)]] * 4 + [[(n, 2)] * 3] * 3  # one at a time, then three at once
        for batch in batches:
            ps = [subprocess.Popen([workload, str(n), str(t)], env=preload, stdout=subprocess.PIPE, text=True,
                                   preexec_fn=enter) for n, t in batch]
            for p in ps:
                s, dropped = counted(p.communicate(timeout=120)[0], "a program in the cgroup")
                if p.returncode != 0 or dropped:
                    bpftest.fail(f"a program exited {p.returncode}, its library dropped {dropped}")
                inside += s
        outside = counted(out_p.communicate(timeout=120)[0], "the program outside")[0]
        # The daemon reads what is left (slow opens put the records off for seconds): until its CPU
        # stops growing, so that what the test compares is the record path's, not the end's cut
        # (which is counted too: "sent and not read").
        idle_since, last, deadline = time.monotonic(), -1.0, time.monotonic() + 90
        while time.monotonic() < deadline and time.monotonic() - idle_since < 1.5:
            now = bpftest.process_cpu_seconds(d.pid)
            if now != last:
                idle_since, last = time.monotonic(), now
            time.sleep(0.25)
        d.send_signal(signal.SIGINT)
        log += rest()
    finally:
        tree.remove()
    print("\n".join(line for line in log.splitlines() if "Allocations:" in line or "alloc:" in line
                    or "put off" in line))
    if d.returncode != 0:
        bpftest.fail(f"otelprofd exited {d.returncode}")
    types, values = pprofdecode.sample_types(pprof)
    i = types.index(("alloc_objects", "count"))
    in_profile = sum(v[i] for v in values)
    kept = number(log, r"Allocations: (\d+) sampled")
    drops = {
        "ring buffer full": number(log, r"dropped: (\d+) ring buffer full"),
        "scratch busy": number(log, r"(\d+) scratch busy"),
        "by the aggregate": number(log, r"(\d+) by the aggregate"),
        "put off and their process gone": number(log, r"(\d+) put off and their process gone"),
        "sent and not read": number(log, r"(\d+) sent and not read"),
    }
    ran = number(log, r"alloc: bpf: (\d+) alloc probes ran")
    others = number(log, r"alloc probes ran \((\d+) of other processes\)")
    print(f"{name}: the library sampled {inside} in the cgroup and {outside} outside; the profile's alloc_objects "
          f"{in_profile} (the daemon's count {kept}); counted drops {drops}; probes ran {ran}, {others} of other "
          "processes")
    if in_profile != kept:
        bpftest.fail(f"{name}: the profile holds {in_profile} allocations, the daemon says it kept {kept}")
    if in_profile + sum(drops.values()) != inside:
        bpftest.fail(f"{name}: {inside} sampled allocations, {in_profile} in the profile and "
                     f"{sum(drops.values())} counted as dropped: {inside - in_profile - sum(drops.values())} "
                     "lost without a counter")
    if others != outside or ran != inside + outside:
        bpftest.fail(f"{name}: {ran} alloc probes ran, {others} of other processes; the programs sampled {inside} "
                     f"inside and {outside} outside")
    if in_profile < inside // 2:
        bpftest.fail(f"{name}: only {in_profile} of {inside} sampled allocations reached the profile")
    # Their stacks: nearly all of the programs' allocations are made by work() (main's few are the
    # threads' and stdio's), put off or not, their process gone or not when they were handled.
    named = total = 0
    for (_labels, frames, _first), v in zip(pprofdecode.samples(pprof, frames=True), values):
        total += v[i]
        named += v[i] if "work" in frames else 0
    print(f"{name}: {named} of {total} allocations with work() in their stack")
    if total != in_profile or named < 0.95 * total:
        bpftest.fail(f"{name}: only {named} of {total} allocations have work() in their stack")
    return log


# About 3,000 sampled allocations a run: a record is up to about 12 KiB (a stack window copied whole
# until unwinding has sized its thread's), so all of them fit the 64 MiB ring buffer however late the
# daemon reads on a loaded machine; more would end in counted drops (ring buffer full), not a failure
# of what this test checks, but of its last sanity check.
run("as-is", {}, 100)
log = run("slow-opens", {"OTELPROFD_TEST_OPEN_DELAY_MS": "300"}, 100)
if number(log, r"(\d+) off-CPU and allocation stacks") == 0:
    bpftest.fail("slow opens: no allocation stack was put off")
print("PASS")
