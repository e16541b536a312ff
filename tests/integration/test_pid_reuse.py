#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PID reuse and exec within one profile never mix two processes (issue 5).

reuse-x and reuse-y load at the same addresses and differ only in their hot function's name, so
symbolizing one's samples with the other's mappings would name the wrong function. Within one
`-d` run: reuse-x burns and exits, then /proc/sys/kernel/ns_last_pid makes reuse-y get its pid; and
one process runs reuse-x, then execs reuse-y. Every sample must show the hot function of the
program that took it and that program's executable (process.executable.name, service.name)."""
import os
import signal
import subprocess
import time

import bpftest
import pprofdecode

bpftest.require_bpf()
X = os.environ["REUSE_X_WORKLOAD"]
Y = os.environ["REUSE_Y_WORKLOAD"]
# Long enough for a daemon behind a loaded host to read each program's mappings while it runs (its
# first sample wakes the daemon, which may not run for a while): at 400 ms, with 35 runnable tasks on
# 2 CPUs, reuse-x and reuse-y had exited before (their samples had no mappings, 0 named, at any
# --symbol-cache); the checks are the same.
BURN_MS = "1500"
out = bpftest.tmpdir()
pprof = os.path.join(out, "reuse.pb.gz")
log = os.path.join(out, "otelprofd.log")
env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}


def start_y_with_pid(pid):
    """Fork reuse-y so that it gets pid (ns_last_pid is pid - 1 just before the fork); its pid."""
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(pid - 1))
    child = os.fork()
    if child == 0:
        try:
            os.execve(Y, [Y, BURN_MS], env)
        finally:
            os._exit(127)
    return child


with open(log, "w") as logf:
    daemon = subprocess.Popen([bpftest.otelprofd(), "-F", "499", "-d", "60s", "-v", "-o", pprof],
                              stdout=logf, stderr=subprocess.STDOUT)
try:
    deadline = time.time() + 30
    while "Profiling every process" not in open(log).read():
        if daemon.poll() is not None or time.time() > deadline:
            bpftest.fail("otelprofd did not start:\n" + open(log).read()[-3000:])
        time.sleep(0.1)

    # Other processes on the host may take the pid between the write and the fork: try again.
    reused = None
    for attempt in range(20):
        x = subprocess.Popen([X, BURN_MS], env=env)
        x.wait()
        y = start_y_with_pid(x.pid)
        os.waitpid(y, 0)
        if y == x.pid:
            reused = y
            break
    if reused is None:
        bpftest.fail("could not make reuse-y take reuse-x's pid in 20 attempts")
    print(f"pid {reused}: reuse-x, exited, then reuse-y (attempt {attempt + 1})")

    # One process, two programs: reuse-x burns, then execs reuse-y, which burns.
    both = subprocess.Popen([X, BURN_MS, Y, BURN_MS], env=env)
    both.wait()
    print(f"pid {both.pid}: reuse-x exec'd reuse-y")
    time.sleep(0.5)
finally:
    daemon.send_signal(signal.SIGINT)
    daemon.wait(timeout=60)
print(open(log).read()[-3000:])
if daemon.returncode != 0:
    bpftest.fail(f"otelprofd exited {daemon.returncode}")

HOT = {"reuse-x": "reuse_x_hot", "reuse-y": "reuse_y_hot"}
for pid in (reused, both.pid):
    hot = {exe: 0 for exe in HOT}
    wrong = []
    for labels, names, value in pprofdecode.samples(pprof, frames=True):
        if labels.get("pid") != pid:
            continue
        exe = labels.get("process.executable.name")
        for program, function in HOT.items():
            if function not in names:
                continue
            if exe != program or labels.get("service.name") != program:
                wrong.append((function, labels))
            else:
                hot[program] += value
    print(f"pid {pid}: samples in each program's hot function: {hot}")
    if wrong:
        for function, labels in wrong[:5]:
            print("wrong:", function, labels)
        bpftest.fail(f"pid {pid}: {len(wrong)} samples in one program's function described as the other")
    for program, n in hot.items():
        if n < 10:
            bpftest.fail(f"pid {pid}: only {n} samples of {program} in {HOT[program]} (its samples were "
                         f"symbolized or described as another program's)")
print("PASS")
