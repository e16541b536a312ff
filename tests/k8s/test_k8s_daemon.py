#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The real daemon (BPF) in a fake cluster: two workloads in cgroups named as the kubelet and
containerd name a pod's containers, a fake API server over TLS (in-cluster configuration:
KUBERNETES_SERVICE_HOST/PORT, the service account directory, K8S_NODE_NAME) listing the pod with one
container started and then a watch event starting the second. The pprof labels of their samples carry
k8s.pod.name, k8s.namespace.name, k8s.container.name, and service.name from the container name
(unless the process sets OTEL_SERVICE_NAME). With the API down the daemon still profiles, without
those names, and says so once; --kubernetes off asks nothing; --kubernetes on outside a cluster says why."""
import os
import socket
import subprocess
import tempfile
import time

import bpftest
import cgrouptest
import fakeapi
import pprofdecode
from fakeapi import event, pod, pod_list

bpftest.require_bpf()
tree = cgrouptest.Tree(cgrouptest.v2_root())

workload = os.environ["SPLIT_WORKLOAD"]
tmp = tempfile.mkdtemp(prefix="otelprofd-k8s-")
secrets, cert, key = fakeapi.make_pki(os.path.join(tmp, "pki"))
top = f"otelprofd-k8s-test-{os.getpid()}"
UID = "6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b"
APP = "1234567890abcdef" * 4
PROXY = "fedcba0987654321" * 4
pod_dir = ("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice" % UID.replace("-", "_"))
containers = {"app": pod_dir + "/cri-containerd-%s.scope" % APP, "proxy": pod_dir + "/cri-containerd-%s.scope" % PROXY}
POD = pod(UID, "checkout-7f9c4d-q8x2z", "shop", 100, [("checkout", "containerd://" + APP), ("envoy", None)])
POD_STARTED = pod(UID, "checkout-7f9c4d-q8x2z", "shop", 120,
                  [("checkout", "containerd://" + APP), ("envoy", "containerd://" + PROXY)])
OTHER = pod("0a0a0a0a-0000-4000-8000-000000000000", "other-0", "default", 90, [("x", "containerd://" + "9" * 64)])



def start_in(cgroup_dir, env):
    return tree.start_in(cgroup_dir, [workload, "30"], env)


def daemon_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KUBERNETES_", "OTELPROFD_K8S_", "OTEL_")) and k not in ("K8S_NODE_NAME", "NODE_NAME")}
    env.update(extra)
    return env


def in_cluster(port):
    return daemon_env(KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT=str(port),
                      OTELPROFD_K8S_SECRETS_DIR=secrets, K8S_NODE_NAME=fakeapi.NODE)


def run(args, env):
    """Run otelprofd with env; echo its output; the result."""
    print("$", " ".join(args), flush=True)
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120, env=env)
    print(p.stdout[-4000:] + p.stderr[-4000:], flush=True)
    if p.returncode != 0:
        bpftest.fail(f"otelprofd exited {p.returncode}")
    return p


def by_container(path):
    """{container: [labels of each sample]} for the workloads' samples."""
    out = {}
    for labels, _, _ in pprofdecode.samples(path):
        for name, p in procs.items():
            if labels.get("pid") == p.pid:
                out.setdefault(name, []).append(labels)
    return out


def check(samples, name, want):
    if not samples.get(name):
        bpftest.fail(f"no samples of {name}")
    for labels in samples[name]:
        for key, value in want.items():
            if labels.get(key) != value:
                bpftest.fail(f"{name}: {key} is {labels.get(key)!r}, expected {value!r} (labels {labels})")


plain = daemon_env()
procs = {}
otelprofd = bpftest.otelprofd()
profile = ["--cgroup", "/" + top, "-F", "199", "-o"]
api = fakeapi.FakeAPI(cert, key, [
    {"kind": "list", "check": {"fieldSelector": "spec.nodeName=" + fakeapi.NODE}, "body": pod_list(100, [OTHER, POD])},
    {"kind": "watch", "check": {"resourceVersion": "100"}, "events": [event("MODIFIED", POD_STARTED)], "hold": True},
])
idle = fakeapi.FakeAPI(cert, key, [])
try:
    procs["app"] = start_in(tree.make(top + "/" + containers["app"]), plain)
    procs["proxy"] = start_in(tree.make(top + "/" + containers["proxy"]), dict(plain, OTEL_SERVICE_NAME="edge-proxy"))
    time.sleep(0.3)

    named = os.path.join(tmp, "named.pb.gz")
    r = run([otelprofd, *profile, named, "-d", "3s", "-v"], in_cluster(api.port))
    if not api.wait_done(2, timeout=5):
        bpftest.fail("the daemon did not list and then watch the pods")
    for e in api.errors:
        bpftest.fail("fake API: " + e)
    if any("warning" in line and "Kubernetes" in line for line in r.stderr.splitlines()):
        bpftest.fail("a Kubernetes warning with the API up")

    # The API is down (nothing listens on the port): the daemon profiles all the same, and says so once.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    down = os.path.join(tmp, "down.pb.gz")
    r = run([otelprofd, *profile, down, "-d", "2s"], in_cluster(dead))
    said = [line for line in r.stderr.splitlines() if "Kubernetes" in line]
    if len(said) != 1 or "warning" not in said[0] or "k8s.pod.name" not in said[0]:
        bpftest.fail(f"with the API down, expected one warning, got {said}")

    # --kubernetes off: in a cluster, but the API is never asked.
    off = os.path.join(tmp, "off.pb.gz")
    run([otelprofd, *profile, off, "-d", "1s", "--kubernetes", "off"], in_cluster(idle.port))
    if idle.requests:
        bpftest.fail(f"--kubernetes off still asked the API: {idle.requests}")

    # --kubernetes on outside a cluster: says why once, and profiles.
    r = run([otelprofd, *profile, os.path.join(tmp, "on.pb.gz"), "-d", "1s", "--kubernetes", "on"], plain)
    said = [line for line in r.stderr.splitlines() if "Kubernetes" in line]
    if len(said) != 1 or "KUBERNETES_SERVICE_HOST" not in said[0]:
        bpftest.fail(f"--kubernetes on without a cluster: expected one line saying why, got {said}")
finally:
    api.close()
    idle.close()
    for p in procs.values():
        p.kill()
        p.wait()
    tree.remove()

pod_names = {"k8s.pod.uid": UID, "k8s.pod.name": "checkout-7f9c4d-q8x2z", "k8s.namespace.name": "shop"}
samples = by_container(named)
# From the list: the container name, and service.name from it.
check(samples, "app", dict(pod_names, **{"container.id": APP, "k8s.container.name": "checkout",
                                         "service.name": "checkout"}))
# Started by the watch event; the process's own OTEL_SERVICE_NAME wins over the container name.
check(samples, "proxy", dict(pod_names, **{"container.id": PROXY, "k8s.container.name": "envoy",
                                           "service.name": "edge-proxy"}))
for path, what in ((down, "the API down"), (off, "--kubernetes off")):
    samples = by_container(path)
    check(samples, "app", {"k8s.pod.uid": UID, "container.id": APP, "service.name": "split"})
    for labels in samples["app"] + samples.get("proxy", []):
        for key in ("k8s.pod.name", "k8s.namespace.name", "k8s.container.name"):
            if key in labels:
                bpftest.fail(f"{what}: unexpected {key}={labels[key]!r}")
print("PASS")
