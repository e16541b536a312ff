#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""--pid with --follow-children profiles a child the target starts after otelprofd did (and only
with the flag); SIGTERM and SIGINT stop a run of unbounded duration and still write the profile;
SIGHUP, SIGUSR1 and SIGUSR2 mid-run do not: the run goes on to its end, each is logged (SIGUSR1 with
the counters' summary line) and the file is whole."""
import os
import signal
import subprocess
import time

import bpftest

bpftest.require_bpf()
workload = os.environ["SPLIT_WORKLOAD"]
out = bpftest.tmpdir()


# The shell execs the workload in place (same pid): a child of the shell is needed to test following.
def profile_forking_parent(follow):
    folded = os.path.join(out, f"fork-{follow}.folded")
    parent = subprocess.Popen(["/bin/sh", "-c", f"sleep 1.5; {workload} 4; true"])
    try:
        args = [bpftest.otelprofd(), "--pid", str(parent.pid), "-F", "199", "--duration", "4s", "-o", folded]
        bpftest.run(args + (["--follow-children"] if follow else []))
    finally:
        parent.wait()
    return bpftest.read_folded(folded)


followed = profile_forking_parent(True)
hot = sum(n for s, n in followed.items() if s[0] == "split" and s[-1].startswith("hot_"))
print(f"--follow-children: {hot} samples in the child's hot functions")
if hot < 100:
    bpftest.fail("the child started after otelprofd was not profiled with --follow-children")
unfollowed = profile_forking_parent(False)
leaked = sum(n for s, n in unfollowed.items() if s[0] == "split")
print(f"without --follow-children: {leaked} samples of the child")
if leaked:
    bpftest.fail("the child was profiled without --follow-children")

for sig in (signal.SIGTERM, signal.SIGINT):
    folded = os.path.join(out, f"signal-{sig}.folded")
    work = subprocess.Popen([workload, "10"])
    daemon = subprocess.Popen([bpftest.otelprofd(), "--pid", str(work.pid), "-F", "199", "--duration", "0",
                               "-o", folded], stderr=subprocess.PIPE, text=True)
    # 3 s of profiling: counted from when it profiles (the BPF load of a sanitizer build on a loaded
    # machine took 2 s once, and left 121 samples).
    err = bpftest.wait_profiling(daemon, others=(work,))
    cpu = bpftest.process_cpu_seconds(work.pid)
    time.sleep(3)
    cpu = bpftest.process_cpu_seconds(work.pid) - cpu
    daemon.send_signal(sig)
    try:
        err += daemon.communicate(timeout=30)[1]
    finally:
        work.kill()
        work.wait()
    print(err)
    if daemon.returncode != 0:
        bpftest.fail(f"exit {daemon.returncode} after {sig.name}")
    samples = sum(bpftest.read_folded(folded).values())
    print(f"{sig.name}: exit 0, {samples} samples written; the workload had {cpu:.2f} s of CPU in the 3 s")
    # 200 at least, or on a host so loaded that the workload had under 2 s of CPU, half of 199 Hz of it.
    if samples < bpftest.least_samples(200, 199, cpu):
        bpftest.fail(f"only {samples} samples written after {sig.name} at 199 Hz for 3 s "
                     f"({cpu:.2f} s of the workload's CPU)")
# Signals that must not end the run: -d 6s, SIGHUP at 1.5 s, SIGUSR1 at 2.5 s, SIGUSR2 at 3.5 s.
folded = os.path.join(out, "hup-usr.folded")
work = subprocess.Popen([workload, "15"])
spawned = time.monotonic()
daemon = subprocess.Popen([bpftest.otelprofd(), "--pid", str(work.pid), "-F", "199", "-d", "6s", "-o", folded],
                          stderr=subprocess.PIPE, text=True)
# The signals' times count from when it profiles (its handlers are set by then).
started_log = bpftest.wait_profiling(daemon, others=(work,))
start = time.monotonic()
cpu = bpftest.process_cpu_seconds(work.pid)
try:
    for at, sig in ((1.5, signal.SIGHUP), (2.5, signal.SIGUSR1), (3.5, signal.SIGUSR2)):
        time.sleep(max(0, start + at - time.monotonic()))
        if daemon.poll() is not None:
            bpftest.fail(f"otelprofd ended (exit {daemon.returncode}) before {sig.name} was sent")
        daemon.send_signal(sig)
    _, err = daemon.communicate(timeout=60)
    cpu = bpftest.process_cpu_seconds(work.pid) - cpu
finally:
    work.kill()
    work.wait()
elapsed = time.monotonic() - spawned
err = started_log + err
print(err)
if daemon.returncode != 0:
    bpftest.fail(f"exit {daemon.returncode} after SIGHUP, SIGUSR1 and SIGUSR2")
if elapsed < 6:
    bpftest.fail(f"the run ended after {elapsed:.1f} s, before its 6 s")
for line in ("Received SIGHUP: ignored", "SIGUSR1: stats: ", "Received SIGUSR2: ignored",
             "Wrote "):
    if line not in err:
        bpftest.fail(f"no {line!r} in the log")
samples = sum(bpftest.read_folded(folded).values())
print(f"SIGHUP, SIGUSR1, SIGUSR2: the run lasted {elapsed:.1f} s, exit 0, {samples} samples written; "
      f"the workload had {cpu:.2f} s of CPU meanwhile")
if samples < bpftest.least_samples(400, 199, cpu):
    bpftest.fail(f"only {samples} samples written at 199 Hz for 6 s ({cpu:.2f} s of the workload's CPU)")
print("PASS")
