#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Messages that say what happened, and the journal's priorities. Eight real daemons run at once
(4 s each, one export a second, --timeout 3s) against peers that fail in one way each:
  gRPC and HTTP to a port where nothing listens      "connection refused"
  gRPC and HTTP with TLS to a plain port              "TLS handshake failed: ... wrong version number"
  gRPC and HTTP to a peer that answers random bytes   "not gRPC over HTTP/2", "not HTTP"
  gRPC to a peer that accepts and never answers       "timed out"
and each bounded run that delivered nothing exits 1 with "Nothing was delivered". The gRPC refused
run has JOURNAL_STREAM naming its stderr: every line carries its priority (<3> error, <4> warning,
<6> info). Last, the shipped configuration file (no endpoint, no output, until stopped) with -v,
stderr as the journal: it warns at start that profiles go nowhere (<4>), and libbpf's lines come at
debug priority with one "libbpf: " prefix."""
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import bpftest
import otlptest

bpftest.require_bpf()
out = bpftest.tmpdir()
otelprofd = bpftest.otelprofd()
source_root = os.environ["SOURCE_ROOT"]
workload = subprocess.Popen([os.environ["SPLIT_WORKLOAD"], "60"])


def serve(handler):
    """A TCP server on 127.0.0.1 that runs handler(conn) per connection in a thread; its port."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)

    def accept():
        while True:
            c, _ = s.accept()
            threading.Thread(target=lambda: (handler(c), c.close()), daemon=True).start()
    threading.Thread(target=accept, daemon=True).start()
    return s.getsockname()[1]


def silent(c):
    try:
        while c.recv(4096):
            pass
    except OSError:
        pass


def http_400(c):
    try:
        c.recv(4096)
        c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    except OSError:
        pass


def journal_env(path):
    st = os.stat(path)
    return dict(os.environ, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")


closed = otlptest.free_port()
plain = otlptest.Collector(os.path.join(out, "plain"))
garbage = otlptest.Collector(os.path.join(out, "garbage"), "--raw-garbage")
silent_port = serve(silent)
h400_port = serve(http_400)
GRPC = ["--protocol", "grpc"]
HTTP = ["--protocol", "http/protobuf"]
cases = [
    # name, endpoint flags, expected words, stderr is the journal
    ("grpc-refused", ["--endpoint", f"127.0.0.1:{closed}", "--insecure", *GRPC], "connection refused", True),
    ("http-refused", ["--endpoint", f"http://127.0.0.1:{closed}", *HTTP], "connection refused", False),
    ("grpc-tls-to-plain", ["--endpoint", f"https://127.0.0.1:{plain.grpc_port}", *GRPC],
     "TLS handshake failed: .*wrong version number", False),
    ("http-tls-to-plain", ["--endpoint", f"https://127.0.0.1:{h400_port}", *HTTP],
     "TLS handshake failed: .*wrong version number", False),
    ("grpc-garbage", ["--endpoint", f"127.0.0.1:{garbage.grpc_port}", "--insecure", *GRPC],
     "not gRPC over HTTP/2", False),
    ("http-garbage", ["--endpoint", f"http://127.0.0.1:{garbage.http_port}", *HTTP], "not HTTP", False),
    ("grpc-silent", ["--endpoint", f"127.0.0.1:{silent_port}", "--insecure", *GRPC], "timed out", False),
]
runs = []
for name, flags, words, journal in cases:
    log = os.path.join(out, name + ".log")
    f = open(log, "w")
    # --timeout 3s: eight daemons start at once, and a TLS handshake under ASan on a loaded machine can
    # take more than a second.
    cmd = [otelprofd, "--pid", str(workload.pid), "-F", "199", "-d", "4s", "--export-interval", "1s",
           "--timeout", "3s", *flags]
    print("$", " ".join(cmd), flush=True)
    runs.append((name, words, journal, log, subprocess.Popen(cmd, stdout=f, stderr=f,
                                                              env=journal_env(log) if journal else None)))

# The shipped configuration, as the service runs it, with -v; stopped once it samples.
svc_log = os.path.join(out, "service.log")
svc_out = open(svc_log, "w")
svc = subprocess.Popen([otelprofd, "--config", os.path.join(source_root, "systemd", "otelprofd.conf"), "-v",
                        "--pid", str(workload.pid)],
                       stdout=subprocess.DEVNULL, stderr=svc_out, env=journal_env(svc_log))

failures = []
PRIORITY = re.compile(r"^<[3467]>")
for name, words, journal, log, p in runs:
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = "hung"
    text = open(log).read()
    print(f"== {name}: exit {rc}\n" + "\n".join(l for l in text.splitlines() if "ollector" in l or "elivered" in l))
    if rc != 1:
        failures.append(f"{name}: exit {rc}, expected 1 (nothing was delivered)")
    if not re.search(r"Collector unavailable.*" + words, text):
        failures.append(f"{name}: no 'Collector unavailable ... {words}' line")
    if "Nothing was delivered to the collector" not in text:
        failures.append(f"{name}: no 'Nothing was delivered' line")
    if journal:
        bad = [l for l in text.splitlines() if not PRIORITY.match(l)]
        if bad:
            failures.append(f"{name}: lines without a priority prefix under the journal: {bad[:3]}")
        for want in (r"^<3>error: Nothing was delivered", r"^<4>warning: Collector unavailable",
                     r"^<6>Profiling"):
            if not re.search(want, text, re.M):
                failures.append(f"{name}: no line matching {want}")
    elif not text.startswith("otelprofd: "):
        failures.append(f"{name}: plain stderr lost its 'otelprofd: ' prefix")

deadline = time.time() + 30
while "Profiling" not in open(svc_log).read() and svc.poll() is None and time.time() < deadline:
    time.sleep(0.2)
svc.send_signal(signal.SIGTERM)
rc = svc.wait(timeout=30)
text = open(svc_log).read()
print(f"== service configuration: exit {rc}\n" + "\n".join(text.splitlines()[:3]))
if rc != 0:
    failures.append(f"service configuration: exit {rc}")
if not re.search(r"^<4>warning: No collector endpoint and no --output: profiles go nowhere but the log", text, re.M):
    failures.append("service configuration: no warning that profiles go nowhere")
if not re.search(r"^<7>debug: libbpf: \S", text, re.M) or "libbpf: libbpf:" in text:
    failures.append("service configuration: libbpf lines missing under -v, or with a doubled prefix")
bad = [l for l in text.splitlines() if not PRIORITY.match(l)]
if bad:
    failures.append(f"service configuration: lines without a priority prefix: {bad[:3]}")

workload.kill()
plain.stop()
garbage.stop()
if failures:
    bpftest.fail("; ".join(failures))
print("OK")
