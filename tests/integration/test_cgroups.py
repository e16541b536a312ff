#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Real cgroups on this host's cgroup v2 hierarchy, named as each runtime names them, with a
workload inside each: the pprof labels of their samples carry container.id, k8s.pod.uid,
systemd.unit and service.name; --cgroup keeps only the samples of the cgroups below it and
--container only those of one container."""
import os
import subprocess
import time

import bpftest
import cgrouptest
import pprofdecode

bpftest.require_bpf()
tree = cgrouptest.Tree(cgrouptest.v2_root())

workload = os.environ["SPLIT_WORKLOAD"]
out = bpftest.tmpdir()
top = f"otelprofd-test-{os.getpid()}"
DOCKER = "0123456789abcdef" * 4
CONTAINERD = "fedcba9876543210" * 4
PODMAN = "00112233445566778899aabbccddeeff" * 2
UID = "0b5e8f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
layouts = {
    # name: (cgroup path below top, expected attributes)
    "docker": ("system.slice/docker-%s.scope" % DOCKER, {"container.id": DOCKER}),
    "k8s-containerd": ("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/cri-containerd-%s.scope"
                       % (UID.replace("-", "_"), CONTAINERD),
                       {"container.id": CONTAINERD, "k8s.pod.uid": UID}),
    "podman": ("machine.slice/libpod-%s.scope/container" % PODMAN, {"container.id": PODMAN}),
    "systemd": ("system.slice/otelprof-demo.service", {"systemd.unit": "otelprof-demo.service",
                                                       "service.name": "otelprof-demo"}),
}



def start_in(cgroup_dir):
    return tree.start_in(cgroup_dir, [workload, "20"])


procs = {}
try:
    for name, (path, _) in layouts.items():
        procs[name] = start_in(tree.make(top + "/" + path))
    outsider = subprocess.Popen([workload, "20"])  # in this test's own cgroup: must be filtered out
    time.sleep(0.3)

    everything = os.path.join(out, "all.pb.gz")
    bpftest.run([bpftest.otelprofd(), "--cgroup", "/" + top, "-F", "199", "-d", "3s", "-o", everything])
    one = os.path.join(out, "one.pb.gz")
    bpftest.run([bpftest.otelprofd(), "--container", CONTAINERD[:12], "-F", "199", "-d", "2s", "-o", one])
    bad = bpftest.run([bpftest.otelprofd(), "--container", "abcabcabcabc", "-d", "1s"], check=False)
    if bad.returncode != 2 or "no cgroup" not in bad.stderr:
        bpftest.fail("--container with an unknown id must say so and exit 2")
finally:
    for p in list(procs.values()) + ([outsider] if "outsider" in dir() else []):
        p.kill()
        p.wait()
    tree.remove()

by_pid = {p.pid: name for name, p in procs.items()}
seen = {}
for labels, leaf, value in pprofdecode.samples(everything):
    pid = labels.get("pid")
    if pid not in by_pid:
        bpftest.fail(f"--cgroup kept a sample of pid {pid} ({labels.get('process_name')}), outside the cgroup")
    name = by_pid[pid]
    want = layouts[name][1]
    for key, value_ in want.items():
        if labels.get(key) != value_:
            bpftest.fail(f"{name}: {key} is {labels.get(key)!r}, expected {value_!r} (labels {labels})")
    for key in ("container.id", "k8s.pod.uid", "systemd.unit"):
        if key not in want and key in labels:
            bpftest.fail(f"{name}: unexpected {key}={labels[key]!r}")
    for key in ("host.name", "host.id", "process.executable.name", "service.name"):
        if not labels.get(key):
            bpftest.fail(f"{name}: no {key} (labels {labels})")
    seen[name] = seen.get(name, 0) + value
print("samples per layout:", seen)
missing = set(layouts) - set(seen)
if missing:
    bpftest.fail(f"no samples of {sorted(missing)}")

pids = {labels.get("pid") for labels, _, _ in pprofdecode.samples(one)}
if pids != {procs["k8s-containerd"].pid}:
    bpftest.fail(f"--container kept pids {pids}, expected only {procs['k8s-containerd'].pid}")
print("PASS")
