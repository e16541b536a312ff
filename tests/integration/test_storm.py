#!/usr/bin/env python3
"""A storm of short-lived processes (150 a second, each burning 10 ms of CPU then exiting):
their samples are attributed to the process that took them (each child's own environment names it
storm-PID, and its service.name must be that of the pid label), symbolized (storm_burn), and
described as the storm executable, although most have exited long before the profile is built."""
import os
import subprocess

import bpftest
import pprofdecode

bpftest.require_bpf()
storm = os.environ["STORM_WORKLOAD"]
out = bpftest.tmpdir()
pprof = os.path.join(out, "storm.pb.gz")

env = dict(os.environ, OTEL_SERVICE_NAME="storm-driver")
driver = subprocess.Popen([storm, "150", "3", "10"], env=env, stdout=subprocess.PIPE, text=True)
try:
    bpftest.run([bpftest.otelprofd(), "--pid", str(driver.pid), "--follow-children", "-F", "499", "-d", "4s",
                 "-v", "-o", pprof])
finally:
    started = int(driver.communicate(timeout=30)[0].strip() or 0)

children = {}
wrong, unsymbolized, total, undescribed = [], 0, 0, 0
for labels, leaf, value in pprofdecode.samples(pprof):
    pid = labels.get("pid")
    if pid == driver.pid:
        if labels.get("service.name") != "storm-driver":
            wrong.append((pid, labels))
        continue
    if labels.get("process.executable.name") != "storm":
        continue  # the instant between fork and exec: the child still runs the driver's code
    total += value
    children[pid] = children.get(pid, 0) + value
    service = labels.get("service.name")
    if service == "storm":
        # Exited before otelprofd read its environment (the CPUs are saturated): described by its
        # executable only, which is less, not wrong.
        undescribed += value
    elif service != f"storm-{pid}":
        wrong.append((pid, labels))
    if leaf is None:
        unsymbolized += value

print(f"{started} children started, {len(children)} sampled, {total} samples of children, "
      f"{unsymbolized} with an unsymbolized leaf, {undescribed} of children not described by their environment")
if wrong:
    for pid, labels in wrong[:5]:
        print("wrong:", pid, labels)
    bpftest.fail(f"{len(wrong)} samples attributed to the wrong process")
if started < 300:
    bpftest.fail(f"only {started} children started in 3 s")
if len(children) < started / 2:
    bpftest.fail(f"only {len(children)} of {started} children have samples")
if undescribed > total / 10:
    bpftest.fail(f"{undescribed} of {total} samples of children lack their own service.name")
if unsymbolized > total / 20:
    bpftest.fail(f"{unsymbolized} of {total} samples of children are not symbolized")
# Children also spend time in execve, the dynamic loader and exit: most samples, not all, burn.
burn = sum(v for labels, names, v in pprofdecode.samples(pprof, frames=True)
           if labels.get("process.executable.name") == "storm" and labels.get("pid") != driver.pid
           and "storm_burn" in names)
print(f"{burn} of {total} samples of children in storm_burn")
if burn < total * 0.7:
    bpftest.fail(f"only {burn} of {total} samples of children are in storm_burn")
print("PASS")
