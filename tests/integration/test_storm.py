#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A storm of short-lived processes (200 a second for 3 s, each burning 20 ms then exiting; on this
2-core machine they overlap) with the default ring buffer, profiled from its first child, with pid
reuse: every 4th child is given the pid of the child reaped last (ns_last_pid). Child N names its
thread stN (the ground truth every sample carries from BPF) and its environment storm-N; the driver
is storm-driver.

The ring buffer may overflow and lose exec records (counted): a child's samples must then never be
described with its parent's environment (service.name storm-driver) nor another child's. A sample may
say less (the child's own name, when it exited before otelprofd could read /proc), which is counted,
never wrong. Most samples must still be described, symbolized (storm_burn called from main) and
attributed to the child's pid, although most children exited long before the profile is built."""
import os
import re
import signal
import subprocess
import time

import bpftest
import pprofdecode

bpftest.require_bpf()
storm = os.environ["STORM_WORKLOAD"]
out = bpftest.tmpdir()
pprof = os.path.join(out, "storm.pb.gz")
log = os.path.join(out, "otelprofd.log")

# STORM_WAIT_LINE: the driver waits for a line on stdin, sent once otelprofd profiles it, so that the
# whole storm is profiled however long otelprofd's start takes on a loaded machine.
env = dict(os.environ, OTEL_SERVICE_NAME="storm-driver", STORM_WAIT_LINE="1")
driver = subprocess.Popen([storm, "200", "3", "20", "4"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True)
with open(log, "w") as logf:
    daemon = subprocess.Popen([bpftest.otelprofd(), "--pid", str(driver.pid), "--follow-children", "-F", "499",
                               "-d", "0", "-v", "-o", pprof], stdout=logf, stderr=subprocess.STDOUT)
try:
    deadline = time.time() + 60
    while "Profiling" not in open(log).read():
        if daemon.poll() is not None or time.time() > deadline:
            bpftest.fail("otelprofd did not start:\n" + open(log).read()[-3000:])
        time.sleep(0.05)
    lines = driver.communicate("go\n", timeout=120)[0].split("\n")
finally:
    driver.kill()
    if daemon.poll() is None:
        daemon.send_signal(signal.SIGINT)
    daemon.wait(timeout=120)
text = open(log).read()
print(text[-3000:])
if daemon.returncode != 0:
    bpftest.fail(f"otelprofd exited {daemon.returncode}")
started, reused = int(lines[0] or 0), int(lines[1] or 0)
pid_of = {}
for line in lines[2:]:
    if line.strip():
        seq, pid = line.split()
        pid_of[int(seq)] = int(pid)

children, seqs_of_pid = {}, {}
wrong, unsymbolized, total, undescribed, burn, burn_from_main = [], 0, 0, 0, 0, 0
for labels, names, value in pprofdecode.samples(pprof, frames=True):
    pid = labels.get("pid")
    service = labels.get("service.name")
    if pid == driver.pid:
        if service != "storm-driver":
            wrong.append((pid, labels))
        continue
    thread = labels.get("thread_name", "")
    if not thread.startswith("st") or not thread[2:].isdigit():
        continue  # between fork and exec (the driver's code), or before the child named itself
    seq = int(thread[2:])
    total += value
    children[seq] = children.get(seq, 0) + value
    seqs_of_pid.setdefault(pid, set()).add(seq)
    if pid != pid_of.get(seq):
        wrong.append((pid, labels))
    elif service == "storm-driver" or (service.startswith("storm-") and service != f"storm-{seq}"):
        wrong.append((pid, labels))  # the parent's environment, or another child's
    elif service != f"storm-{seq}":
        # Exited before otelprofd read its environment: described by its executable or its name
        # only, which is less, not wrong.
        undescribed += value
    if (not names or names[0] is None) and service == f"storm-{seq}":
        # (A child gone before otelprofd read its mappings is counted above as undescribed.)
        unsymbolized += value
    if "storm_burn" in names:
        burn += value
        at = names.index("storm_burn")
        burn_from_main += value if at + 1 < len(names) and names[at + 1] == "main" else 0

lost = re.search(r"(\d+) lost \(ring buffer full\)", text)
shared = sum(1 for s in seqs_of_pid.values() if len(s) > 1)
print(f"{started} children started ({reused} with a reused pid), {len(children)} sampled, {total} samples of "
      f"children, {undescribed} not described by their environment, {unsymbolized} others with an unsymbolized leaf, "
      f"{shared} pids sampled as two or more children, {burn} in storm_burn ({burn_from_main} called from main), "
      f"{lost.group(1) if lost else '?'} process records lost")
if wrong:
    for pid, labels in wrong[:5]:
        print("wrong:", pid, labels)
    bpftest.fail(f"{len(wrong)} samples attributed to the wrong process")
if started < 300:
    bpftest.fail(f"only {started} children started in 3 s")
if reused < 20 or shared < 5:
    bpftest.fail(f"pid reuse not exercised: {reused} children got a reaped pid, {shared} pids sampled twice")
if len(children) < started / 2:
    bpftest.fail(f"only {len(children)} of {started} children have samples")
if undescribed > total / 4:
    bpftest.fail(f"{undescribed} of {total} samples of children lack their own service.name")
if unsymbolized > total / 20:
    bpftest.fail(f"{unsymbolized} of {total} samples of children are not symbolized")
# Children also spend time in execve, the dynamic loader and exit: most samples, not all, burn.
if burn < total * 0.7:
    bpftest.fail(f"only {burn} of {total} samples of children are in storm_burn")
if burn_from_main < burn * 0.95:
    bpftest.fail(f"only {burn_from_main} of {burn} storm_burn samples have main as its caller")
print("PASS")
