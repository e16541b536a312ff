#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Kubernetes watcher (daemon/process/k8s.c, driven by k8s-probe) against a fake API server over TLS:
LIST then WATCH with the node's field selector and the bearer token, ADDED/MODIFIED/DELETED events, a
bookmark, a malformed line, 410 Gone in the stream and as the HTTP status (each a consistent relist),
a watch the server ends (resumed from the last resourceVersion); failures (401, 500, garbage, a
server certificate from another CA, nothing listening) retried with backoff and said once; and
stopping while a watch is open."""
import os
import re
import socket
import subprocess
import sys
import tempfile

import fakeapi
from fakeapi import event, pod, pod_list, bookmark, status

PROBE = os.environ["K8S_PROBE"]
tmp = tempfile.mkdtemp(prefix="otelprofd-k8s-")
secrets, cert, key = fakeapi.make_pki(os.path.join(tmp, "pki"))
_, other_cert, other_key = fakeapi.make_pki(os.path.join(tmp, "other-pki"))

U1, U2, U3, U4, U5 = (f"{i}{i}{i}{i}{i}{i}{i}{i}-0000-4000-8000-00000000000{i}" for i in range(1, 6))
A, B, C = ("a" * 64, "b" * 64, "c" * 64)
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def probe(url, conditions, lookups=(), timeout_ms=10000, secrets_dir=secrets):
    env = dict(os.environ, OTELPROFD_K8S_API_URL=url, OTELPROFD_K8S_SECRETS_DIR=secrets_dir)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    p = subprocess.run([PROBE, fakeapi.NODE, str(timeout_ms), conditions, *lookups], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    print(p.stdout + p.stderr)
    counters = dict(re.findall(r"(\w+)=(\d+)", re.search(r"^counters (.*)$", p.stdout, re.M).group(1)))
    found = {}
    for line in p.stdout.splitlines():
        m = re.match(r"lookup (\S+) (none|pod=(.*) namespace=(.*) container=(.*))$", line)
        if m:
            found[m.group(1)] = None if m.group(2) == "none" else (m.group(3), m.group(4), m.group(5))
    stop_ms = int(re.search(r"stop_ms=(\d+)", p.stdout).group(1))
    if p.returncode != 0:
        fail(f"the watcher did not reach {conditions}")
    return {k: int(v) for k, v in counters.items()}, found, stop_ms, p.stderr


def expect(found, key, want):
    if found.get(key) != want:
        fail(f"lookup {key}: {found.get(key)} != {want}")


# 1. The whole protocol, in order.
P1 = pod(U1, "web-5d8f7-abcde", "shop", 90, [("nginx", "containerd://" + A)], [("init", None)])
P1b = pod(U1, "web-5d8f7-abcde", "shop", 102, [("nginx", "containerd://" + A), ("sidecar", "docker://" + B)])
P2 = pod(U2, "job-xyz", "batch", 101, [("worker", "cri-o://" + C)])
P3 = pod(U3, "db-0", "data", 190, [("postgres", None)])
P4 = pod(U4, "cache-0", "data", 290, [])
P5 = pod(U5, "late-1", "shop", 301, [])
selector = {"fieldSelector": "spec.nodeName=" + fakeapi.NODE}
steps = [
    {"kind": "list", "check": dict(selector, resourceVersion="0", watch=None), "body": pod_list(100, [P1])},
    {"kind": "watch", "check": dict(selector, resourceVersion="100", allowWatchBookmarks="true"),
     "events": [event("ADDED", P2), event("MODIFIED", P1b), bookmark(150), event("DELETED", P2), "not json\n",
                event("ERROR", status(410, "Expired", "too old resource version: 150 (400)"))]},
    # After a 410 the list is a consistent read: no resourceVersion.
    {"kind": "list", "check": dict(selector, resourceVersion=None), "body": pod_list(200, [P1b, P3])},
    {"kind": "watch", "check": dict(selector, resourceVersion="200"), "status": 410,
     "body": status(410, "Expired", "too old resource version")},
    {"kind": "list", "check": dict(selector, resourceVersion=None), "body": pod_list(300, [P1b, P3, P4])},
    # A watch the server ends (timeoutSeconds): resumed from the last resourceVersion, no relist.
    {"kind": "watch", "check": dict(selector, resourceVersion="300"), "events": [event("ADDED", P5)]},
    {"kind": "watch", "check": dict(selector, resourceVersion="301"), "events": [], "hold": True},
]
api = fakeapi.FakeAPI(cert, key, steps)
try:
    counters, found, stop_ms, stderr = probe(api.url, "lists=3,watches=4,gone=2,events=5",
                                             [f"{U1}/{A}", f"{U1}/{B}", f"{U2}/{C}", f"{U3}/", f"{U4}/{A}",
                                              f"{U5}/", "99999999-0000-4000-8000-000000000009/"])
    api.wait_done(len(steps), timeout=5)
finally:
    api.close()
for e in api.errors:
    fail("fake API: " + e)
if api.done != len(steps):
    fail(f"the watcher took {api.done} of {len(steps)} steps")
expect(found, f"{U1}/{A}", ("web-5d8f7-abcde", "shop", "nginx"))
expect(found, f"{U1}/{B}", ("web-5d8f7-abcde", "shop", "sidecar"))
# Deleted, and missing from the relists: its names stay for the grace period (its last samples).
expect(found, f"{U2}/{C}", ("job-xyz", "batch", "worker"))
expect(found, f"{U3}/", ("db-0", "data", ""))
expect(found, f"{U4}/{A}", ("cache-0", "data", ""))
expect(found, f"{U5}/", ("late-1", "shop", ""))
expect(found, "99999999-0000-4000-8000-000000000009/", None)
if counters["malformed"] != 1 or counters["bookmarks"] != 1 or counters["gone"] != 2 or counters["lists"] != 3:
    fail(f"counters {counters}")
if counters["list_errors"] or counters["watch_errors"]:
    fail(f"errors counted on a clean run: {counters}")
if "warning" in stderr:
    fail("a warning on a clean run")
if stop_ms > 3000:
    fail(f"stopping with a watch open took {stop_ms} ms")

# 2. Failures: 401, 500, a body that is not a PodList, then an answer; a 503 on the watch, then events.
# Each outage is said once, and each recovery once.
steps = [
    {"kind": "list", "status": 401, "body": status(401, "Unauthorized", "Unauthorized")},
    {"kind": "list", "status": 500, "raw": "<html>proxy error</html>"},
    {"kind": "list", "raw": "{\"kind\":\"PodList\",\"items\":["},
    {"kind": "list", "raw": "{\"kind\":\"Status\",\"code\":200}"},
    {"kind": "list", "body": pod_list(10, [P1])},
    {"kind": "watch", "check": {"resourceVersion": "10"}, "status": 503, "raw": "busy"},
    {"kind": "watch", "check": {"resourceVersion": "10"}, "events": [bookmark(11)], "hold": True},
]
api = fakeapi.FakeAPI(cert, key, steps)
try:
    counters, found, stop_ms, stderr = probe(api.url, "lists=1,list_errors=4,watch_errors=1,watches=2,events=1",
                                             [f"{U1}/{A}"])
finally:
    api.close()
for e in api.errors:
    fail("fake API: " + e)
expect(found, f"{U1}/{A}", ("web-5d8f7-abcde", "shop", "nginx"))
warnings = [line for line in stderr.splitlines() if "warning" in line]
if len(warnings) != 2 or "HTTP 401: Unauthorized" not in warnings[0] or "HTTP 503: busy" not in warnings[1]:
    fail(f"expected one warning per outage (401, then 503), got {warnings}")
if stderr.count("answers again") != 2:
    fail("each recovery (a list after the 401, a watch event after the 503) must be said once")

# 3. A server certificate signed by another CA: refused, never trusted.
api = fakeapi.FakeAPI(other_cert, other_key, [{"kind": "list", "body": pod_list(1, [P1])}])
try:
    counters, found, stop_ms, stderr = probe(api.url, "list_errors=2", [f"{U1}/{A}"])
finally:
    api.close()
expect(found, f"{U1}/{A}", None)
if api.done:
    fail("the watcher talked to a server whose certificate the cluster CA did not sign")
if stderr.count("warning") != 1 or "certificate" not in stderr.lower():
    fail("a bad certificate must be said once, naming the certificate")

# 4. Nothing listening: retried with backoff, said once.
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    dead_port = s.getsockname()[1]
counters, found, stop_ms, stderr = probe(f"https://127.0.0.1:{dead_port}", "list_errors=3")
if stderr.count("warning") != 1:
    fail("an unreachable API must be said once")

# 5. No token: the watcher does not start, and says why.
empty = os.path.join(tmp, "empty")
os.makedirs(empty)
p = subprocess.run([PROBE, fakeapi.NODE, "100", "lists=1"], stdout=subprocess.PIPE, text=True,
                   env=dict(os.environ, OTELPROFD_K8S_API_URL="https://127.0.0.1:1", OTELPROFD_K8S_SECRETS_DIR=empty))
if "start_error=-2" not in p.stdout or "token" not in p.stdout:
    fail(f"a missing token must stop the watcher with a reason: {p.stdout!r}")

if failures:
    sys.exit(1)
print("PASS")
