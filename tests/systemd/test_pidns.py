#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""otelprofd in a PID namespace of its own (unshare --pid --fork --mount-proc: a container without
the host's PIDs). BPF sees the host's pids, /proc the namespace's: the daemon translates. Checks:
- a whole-host run inside the namespace sends the namespace's workload (split) under its pid there,
  its executable and service.name, with its hot functions; and a second one, run in a namespace
  nested in the daemon's (unshare again), under its pid in the daemon's namespace;
- no host process arrives: a busy host workload (deep: hot_x/hot_y) beside it is never in the
  profile, and every process.pid sent is one of the namespace's (pids there are small, and each
  is checked against what the namespace ran);
- --pid with the namespace's pid of the workload profiles it;
- --off-cpu: the waits of the namespace's waits workload arrive (the switch-in side translates a
  task other than the current one);
- where /proc shows another namespace's pids (no --mount-proc), the daemon refuses at start with
  one line naming the fix (hostPID / --pid=host), and sends nothing.
The namespace's processes write their pids (as the namespace sees them) into a file before the
daemon starts."""
import os
import shlex
import subprocess
import time

import bpftest
import otlptest

bpftest.require_bpf()
if not os.path.exists("/proc/self/ns/pid"):
    bpftest.skip("no PID namespaces on this kernel")

out = bpftest.tmpdir()
split = os.environ["SPLIT_WORKLOAD"]
host_work = subprocess.Popen([os.environ["DEEP_WORKLOAD"], "90"], stdout=subprocess.DEVNULL)
failures = []


def in_namespace(script, timeout=120, mount_proc=True):
    """Run script with sh as pid 1 of a new PID namespace; its output."""
    cmd = ["unshare", "--pid", "--fork"] + (["--mount-proc"] if mount_proc else []) + ["sh", "-c", script]
    print("$", " ".join(shlex.quote(c) for c in cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    print(p.stdout[-4000:])
    return p


def resources(collector):
    """(attributes, sample list) of every resource the collector received."""
    for summary in otlptest.dump(os.path.join(collector.out_dir, "*-grpc.pb")):
        for r in summary.get("resources", []):
            samples = [s for scope in r["scopes"] for prof in scope["profiles"] for s in prof["sample_list"]]
            yield r["attributes"], samples


try:
    # 1. Whole host, from inside the namespace. sh is pid 1 there and execs the daemon.
    collector = otlptest.Collector(os.path.join(out, "collector"))
    pids_file = os.path.join(out, "pids")
    daemon_args = f"--endpoint 127.0.0.1:{collector.grpc_port} --insecure --export-interval 2s"
    nested_file = os.path.join(out, "nested")
    # The nested workload's pid in the daemon's namespace: unshare's child, as /proc shows it there.
    p = in_namespace(f"{shlex.quote(split)} 30 >/dev/null & echo $! > {pids_file}; "
                     f"unshare --pid --fork {shlex.quote(split)} 30 >/dev/null & u=$!; "
                     f"for i in $(seq 100); do c=$(cat /proc/$u/task/$u/children); [ -n \"$c\" ] && break; "
                     f"sleep 0.05; done; echo $c > {nested_file}; "
                     f"exec {bpftest.otelprofd()} {daemon_args} -d 10s")
    stats = collector.stop()
    if p.returncode != 0:
        bpftest.fail(f"otelprofd in the PID namespace exited {p.returncode}")
    if "PID namespace of its own" not in p.stdout:
        failures.append("the daemon did not say it translates pids")
    workload_pid = int(open(pids_file).read())
    nested_pid = int(open(nested_file).read())
    ours = {1: "otelprofd", workload_pid: "split", nested_pid: "split"}
    nested_hot = 0
    print(f"namespace pids: {ours} (host workload: {host_work.pid})")
    if stats["invalid"]:
        failures.append(f"{stats['invalid']} invalid requests: {stats['last_error']}")
    hot = total = 0
    for attrs, samples in resources(collector):
        pid = attrs.get("process.pid")
        n = sum(s["count"] for s in samples)
        leaves = {s["stack"][0] for s in samples if s["stack"]}
        if leaves & {"hot_x", "hot_y"}:
            failures.append(f"the host workload's samples arrived under pid {pid}: {attrs}")
        if pid not in ours:
            failures.append(f"{n} samples under pid {pid}, which the namespace never ran: {attrs}")
            continue
        name = ours[pid]
        if attrs.get("process.executable.name") != name or attrs.get("service.name") != name:
            failures.append(f"pid {pid} is {name} in the namespace, sent as {attrs}")
        in_hot = sum(s["count"] for s in samples if s["stack"] and s["stack"][0].startswith("hot_"))
        if pid == workload_pid:
            total += n
            hot += in_hot
        elif pid == nested_pid:
            nested_hot += in_hot
    print(f"workload: {total} samples, {hot} in its hot functions; nested workload: {nested_hot} in its hot functions")
    if hot < 30:
        failures.append(f"the namespace's workload was not profiled: {hot} samples in its hot functions")
    if nested_hot < 30:
        failures.append(f"the nested namespace's workload was not profiled: {nested_hot} samples in its hot functions")

    # 2. --pid with the namespace's pid of the workload (the filter works on translated pids).
    folded = os.path.join(out, "pid.folded")
    p = in_namespace(f"{shlex.quote(split)} 20 >/dev/null & "
                     f"{bpftest.otelprofd()} --pid $! -d 5s -o {folded}; s=$?; kill $!; exit $s")
    if p.returncode != 0:
        failures.append(f"otelprofd --pid in the namespace exited {p.returncode}")
    else:
        stacks = bpftest.read_folded(folded)
        hot = sum(n for stack, n in stacks.items() if stack[-1].startswith("hot_"))
        foreign = [s for s in stacks if s[0] != "split"]
        print(f"--pid: {hot} samples in the workload's hot functions, {len(foreign)} stacks of others")
        if hot < 30 or foreign:
            failures.append(f"--pid in the namespace: {hot} hot samples, other stacks {foreign[:3]}")

    # 3. Off-CPU: a wait is joined to its stack by the tid, translated on both sides.
    folded = os.path.join(out, "waits.folded")
    p = in_namespace(f"(sleep 1; echo go) | {shlex.quote(os.environ['WAITS_WORKLOAD'])} 6 >/dev/null & "
                     f"{bpftest.otelprofd()} --off-cpu --off-cpu-probability 1 -d 4s -o {folded}")
    off_cpu = folded.replace(".folded", ".off-cpu.folded")
    if p.returncode != 0 or not os.path.exists(off_cpu):
        failures.append(f"otelprofd --off-cpu in the namespace exited {p.returncode}")
    else:
        waits = {f for stack in bpftest.read_folded(off_cpu) if stack[0] == "waits"
                 for f in stack if f.startswith("wait_")}
        print(f"--off-cpu: the waits workload waited in {sorted(waits)}")
        if not waits:
            failures.append("--off-cpu in the namespace: no wait of the waits workload")

    # 4. /proc of the host in a new PID namespace: refused, one line naming the fix.
    p = in_namespace(f"exec {bpftest.otelprofd()} -d 2s -o {os.path.join(out, 'refused.folded')}",
                     mount_proc=False, timeout=60)
    lines = [line for line in p.stdout.splitlines() if "hostPID" in line]
    if p.returncode == 0 or len(lines) != 1 or "--pid=host" not in lines[0]:
        failures.append(f"no refusal naming hostPID and --pid=host where /proc is another namespace's "
                        f"(exit {p.returncode})")
finally:
    host_work.kill()
    host_work.wait()

if failures:
    bpftest.fail("; ".join(failures))
print("PASS")
