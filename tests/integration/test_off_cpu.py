#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""otelprofd --off-cpu over the waits workload (tests/workloads/waits.c), with every switch-out
sampled (a --pid run's default; --off-cpu-probability 1 where no --pid is given) and the real
sched_switch program:

- the off-CPU time of wait_sleep, wait_pipe and wait_mutex within 10% of what the workload timed
  itself around each call;
- compute_only and compute_locked off CPU only when preempted (a kernel stack through an interrupt
  or preemption path, never a sleeping call), and for little time;
- a process killed while blocked on a pipe: its wait is reported (about the time it was blocked),
  its frames symbolized after it exited;
- a thread blocked across the end of the run: its wait counted up to the end, and said;
- --follow-children (a child started after the attach) and --cgroup (one process in, one out);
- an in-flight map of 2 entries: drops counted in the end-of-run log, the run exits 0;
- pprof has the off_cpu/nanoseconds sample type, with 0 there on on-CPU samples and 0 in the
  on-CPU types of off-CPU samples.
"""
import os
import re
import shutil
import subprocess
import time

import bpftest
import cgrouptest
import pprofdecode

bpftest.require_bpf()
workload = os.environ["WAITS_WORKLOAD"]
out = bpftest.tmpdir()
SECONDS = 4


def profile(args, name, duration, extra=()):
    """Start the workload (it waits for a line), attach otelprofd to it, then let it go.
    Returns (workload stdout, otelprofd stderr, folded path, off-CPU folded path)."""
    folded = os.path.join(out, name + ".folded")
    w = subprocess.Popen([workload] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    # No --off-cpu-probability: a --pid run takes every switch by default (the 10% checks need it).
    cmd = [bpftest.otelprofd(), "--pid", str(w.pid), "--off-cpu",
           "--duration", duration, "-o", folded] + list(extra)
    print("$", " ".join(cmd), flush=True)
    d = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Attached once the daemon says it profiles; the workload then starts waiting.
    log = bpftest.wait_profiling(d, others=(w,))
    w.stdin.write("go\n")
    w.stdin.flush()
    return w, d, log, folded


def finish(d, log):
    rest = d.communicate(timeout=120)[1]
    log += rest
    print(log[-3000:])
    if d.returncode != 0:
        bpftest.fail(f"otelprofd exited {d.returncode}")
    return log


def by_function(stacks):
    """Microseconds off CPU of each function (once per stack, wherever it is in it)."""
    totals = {}
    for stack, us in stacks.items():
        for f in set(stack[1:]):
            totals[f] = totals.get(f, 0) + us
    return totals


def check_waits(stacks, measured, label):
    """Each function's waits: the stacks through its blocking call's kernel path, within 10% of what
    the workload timed itself around each call."""
    # The workload times the blocking call only; a busy host also preempts the waiting threads between
    # calls (the mutex waiter loops without a pause), which is off-CPU time too but not waiting. Each
    # function's waits are the stacks through its blocking call's kernel path.
    blocking = {"wait_sleep": "nanosleep", "wait_pipe": "pipe_read", "wait_mutex": "futex"}
    for name, us in measured.items():
        got = sum(n for stack, n in stacks.items()
                  if name in stack and any(blocking[name] in f for f in stack if f.endswith("_[k]")))
        other = by_function(stacks).get(name, 0) - got
        print(f"{label}{name}: {other / 1e3:.1f} ms off CPU elsewhere in it (preempted)")
        print(f"{label}{name}: {got / 1e3:.1f} ms off CPU, the workload measured {us / 1e3:.1f} ms")
        if us < 500e3:
            bpftest.fail(f"{label}{name}: the workload waited only {us / 1e3:.1f} ms")
        if other > 0.5 * us:
            bpftest.fail(f"{label}{name}: {other / 1e3:.1f} ms off CPU outside its blocking call")
        if abs(got - us) > 0.10 * us:
            bpftest.fail(f"{label}{name}: {got / 1e3:.1f} ms off CPU, not within 10% of the measured {us / 1e3:.1f} ms")


def run_waits(name, extra=()):
    """The waits workload for SECONDS under otelprofd --off-cpu: (what it measured, otelprofd's log,
    the off-CPU stacks)."""
    w, d, log, folded = profile([str(SECONDS)], name, f"{SECONDS + 3}s", extra)
    measured = {}
    for line in w.communicate(timeout=60)[0].splitlines():
        fn, ns = line.split()
        measured[fn] = int(ns) / 1000.0
    log = finish(d, log)
    off = os.path.join(out, name + ".off-cpu.folded")
    if not os.path.exists(off):
        bpftest.fail("no off-CPU folded file beside the folded one")
    return measured, log, bpftest.read_folded(off)


# 1. Waits measured by the workload itself.
measured, log, stacks = run_waits("waits")
check_waits(stacks, measured, "")

# Computing functions: off CPU only through preemption (an interrupt's or a preemption's path).
preempt = re.compile(r"preempt|irqentry|apic_timer|_interrupt|resched|exit_to_user_mode|schedule_tail")
compute_us = 0
for stack, us in stacks.items():
    if not {"compute_only", "compute_locked"} & set(stack):
        continue
    compute_us += us
    kernel = [f for f in stack if f.endswith("_[k]")]
    if not any(preempt.search(f) for f in kernel) or any("futex" in f or "nanosleep" in f for f in kernel):
        bpftest.fail(f"a computing function off CPU without preemption ({us} us): {';'.join(stack)}")
# How much depends on the host's load (two CPUs shared with other tests preempt a lot): not bounded.
print(f"computing functions: {compute_us / 1e3:.1f} ms off CPU, all through preemption")

# 2. A process killed while blocked: its wait ends at its death and is reported, symbolized.
w, d, log, folded = profile(["block"], "block", "4s")
time.sleep(2)
w.kill()
w.wait()
log = finish(d, log)
stacks = bpftest.read_folded(os.path.join(out, "block.off-cpu.folded"))
blocked = by_function(stacks).get("blocked_forever", 0)
print(f"blocked_forever: {blocked / 1e3:.1f} ms off CPU before the kill")
if not 1.5e6 < blocked < 3.5e6:
    bpftest.fail(f"blocked_forever: {blocked / 1e3:.1f} ms off CPU, expected about 2 s (killed while blocked)")

# 2b. A thread still blocked when the run ends: its wait counts up to the end, and is said.
w, d, log, folded = profile(["block"], "across", "3s")
log = finish(d, log)
w.kill()
w.wait()
stacks = bpftest.read_folded(os.path.join(out, "across.off-cpu.folded"))
blocked = by_function(stacks).get("blocked_forever", 0)
print(f"blocked_forever: {blocked / 1e3:.1f} ms off CPU, blocked when the 3 s run ended")
if not 1.5e6 < blocked < 3.5e6:
    bpftest.fail(f"blocked_forever: {blocked / 1e3:.1f} ms off CPU, expected about 3 s (blocked across the end)")
m = re.search(r"(\d+) still waiting at the end", log)
if not m or int(m.group(1)) < 1:
    bpftest.fail("the end-of-run log does not count the waits still going at the end")


def gated(binary, args, cgroup_dir=None, fork=False):
    """binary (a copy of sleep under its own name, so its comm tells it apart) started by a shell
    once a line arrives on its stdin, in cgroup_dir when given, as the shell's child with fork."""
    def enter():
        if cgroup_dir:
            with open(os.path.join(cgroup_dir, "cgroup.procs"), "w") as f:
                f.write("0")
    script = 'read x; "$0" "$@"; exit 0' if fork else 'read x; exec "$0" "$@"'
    return subprocess.Popen(["sh", "-c", script, binary] + args, stdin=subprocess.PIPE, text=True,
                            preexec_fn=enter)


def sleeper(name):
    path = os.path.join(out, name)
    shutil.copy("/bin/sleep", path)
    return path


def nanosleep_us(stacks, comm):
    return sum(n for stack, n in stacks.items() if stack[0] == comm and any("nanosleep" in f for f in stack))


def run_gated(name, procs, extra):
    """otelprofd --off-cpu with extra filter arguments over the gated processes; their off-CPU stacks."""
    folded = os.path.join(out, name + ".folded")
    cmd = [bpftest.otelprofd(), "--off-cpu", "--off-cpu-probability", "1", "-d", "4s", "-o", folded] + extra
    print("$", " ".join(cmd), flush=True)
    d = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = bpftest.wait_profiling(d, others=procs)
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        p.wait(timeout=30)
    finish(d, log)
    return bpftest.read_folded(os.path.join(out, name + ".off-cpu.folded"))


# 2c. --follow-children: a child started after the attach has its waits, under its own name.
parent = gated(sleeper("sleep_child"), ["1.5"], fork=True)
stacks = run_gated("children", [parent], ["--pid", str(parent.pid), "--follow-children"])
child_us = nanosleep_us(stacks, "sleep_child")
print(f"--follow-children: sleep_child {child_us / 1e3:.1f} ms in nanosleep")
if not 1.2e6 < child_us < 2.5e6:
    bpftest.fail(f"--follow-children: the child slept 1.5 s, its off-CPU time is {child_us / 1e3:.1f} ms")

# 2d. --cgroup: the waits of a process in the cgroup, none of one outside.
tree = cgrouptest.Tree(cgrouptest.v2_root())
try:
    inside = gated(sleeper("sleep_in"), ["1.5"], cgroup_dir=tree.make("otelprofd-off-cpu-test/in"))
    outside = gated(sleeper("sleep_out"), ["1.5"])
    stacks = run_gated("cgroup", [inside, outside], ["--cgroup", "/otelprofd-off-cpu-test"])
finally:
    tree.remove()
in_us, out_us = nanosleep_us(stacks, "sleep_in"), sum(n for st, n in stacks.items() if st[0] == "sleep_out")
print(f"--cgroup: sleep_in {in_us / 1e3:.1f} ms in nanosleep, sleep_out {out_us / 1e3:.1f} ms off CPU")
if not 1.2e6 < in_us < 2.5e6 or out_us:
    bpftest.fail(f"--cgroup: {in_us / 1e3:.1f} ms of the process inside (1.5 s asleep), {out_us / 1e3:.1f} ms "
                 "of the one outside (want none)")

# 3. The in-flight map full: counted, no crash (the workload has 6 threads).
w, d, log, folded = profile(["2"], "full", "4s", extra=("--off-cpu-max-inflight", "2"))
w.communicate(timeout=60)
log = finish(d, log)
m = re.search(r"dropped: (\d+) in-flight map full", log)
if not m or int(m.group(1)) == 0:
    bpftest.fail("the in-flight map of 2 entries was never full in the log's count")
print(f"in-flight map full: {m.group(1)} sampled switch-outs dropped and counted")

# 4. pprof: a third sample type, off_cpu/nanoseconds, with the values split by kind.
pprof = os.path.join(out, "waits.pb.gz")
w, d, log, _ = profile(["2"], "pprof", "4s", extra=("-o", pprof))
w.communicate(timeout=60)
finish(d, log)
types, values = pprofdecode.sample_types(pprof)
if types != [("samples", "count"), ("cpu", "nanoseconds"), ("off_cpu", "nanoseconds")]:
    bpftest.fail(f"pprof sample types {types}")
on = offc = 0
for v in values:
    if len(v) != 3 or (v[0] and v[2]) or (not v[0] and (v[1] or not v[2])):
        bpftest.fail(f"a pprof sample mixes on- and off-CPU values: {v}")
    on += v[0] > 0
    offc += v[2] > 0
print(f"pprof: {on} on-CPU samples, {offc} off-CPU samples, three sample types")
if not on or not offc:
    bpftest.fail("pprof lacks on-CPU or off-CPU samples")

# 5. Modules slow to open (every open in the symbolizer's thread 250 ms late, on purpose): the
# off-CPU stacks that needed one are put off to later turns, their end records held and handled
# after them, never waited for in the loop (before, each waited up to 200 ms, then was unwound
# without the module); the waits come out as in 1.
os.environ["OTELPROFD_TEST_OPEN_DELAY_MS"] = "250"
try:
    measured, log, stacks = run_waits("slow-opens", ("-v",))
finally:
    del os.environ["OTELPROFD_TEST_OPEN_DELAY_MS"]
check_waits(stacks, measured, "slow opens: ")
m = re.search(r"put off to a later turn: \d+ samples, (\d+) off-CPU and allocation stacks \((\d+) ends", log)
if not m or int(m.group(1)) == 0:
    bpftest.fail("slow opens: no off-CPU stack put off to a later turn in the log")
turn = re.search(r"loop: the longest turn took ([0-9.]+) ms", log)
print(f"slow opens: {m.group(1)} off-CPU stacks put off, {m.group(2)} ends held with them; longest loop turn "
      f"{turn.group(1) if turn else '?'} ms")

# 6. Over --max-cpu, off-CPU waits are shed in the kernel as on-CPU samples are (1 in N kept, its
# time counted N times; none while a second's share is spent), counted.
measured, log, stacks = run_waits("shed", ("--max-cpu", "0.01"))
m = re.search(r"(\d+) shed in the kernel over --max-cpu", log)
kept = re.search(r"Off-CPU: (\d+) waits? kept", log)
print(f"--max-cpu 0.01: {m.group(1) if m else '?'} off-CPU waits shed in the kernel, "
      f"{kept.group(1) if kept else '?'} kept")
if not m or int(m.group(1)) == 0:
    bpftest.fail("--max-cpu 0.01: no off-CPU wait shed in the kernel")
print("PASS")
