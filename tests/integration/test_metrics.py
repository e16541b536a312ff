#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Self-monitoring of the real daemon: /metrics in the Prometheus text format with counters that
move, /ready answering 200 while sampling works and 503 once profiles stop being delivered (the
collector here is a port nobody listens on), and the periodic one-line summary in the log. The
server answers while 100 idle connections are open, cuts a client that sends its request one byte
a second, and warns when it listens beyond loopback."""
import os
import re
import select
import socket
import subprocess
import time
import urllib.error
import urllib.request

import bpftest

bpftest.require_bpf()
workload = subprocess.Popen([os.environ["SPLIT_WORKLOAD"], "30"])
cmd = [bpftest.otelprofd(), "--pid", str(workload.pid), "-F", "99", "--metrics-address",
       f"127.0.0.1:{bpftest.free_port()}",
       "--stats-interval", "1s", "--endpoint", "127.0.0.1:1", "--insecure", "--export-interval", "1s",
       "--timeout", "1s", "--duration", "20s"]
print("$", " ".join(cmd), flush=True)
daemon = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
port = None
lines = []
try:
    while port is None:
        line = daemon.stderr.readline()
        if not line:
            bpftest.fail("the daemon exited before serving metrics:\n" + "".join(lines))
        lines.append(line)
        m = re.search(r"Metrics on port (\d+)", line)
        if m:
            port = int(m.group(1))

    def get(path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def scrape():
        status, text = get("/metrics")
        if status != 200:
            bpftest.fail(f"/metrics answered {status}")
        values = {}
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            m = re.match(r"^((?:otelprofd|process)_[a-z0-9_]+(?:\{[^}]*\})?) ([0-9.e+-]+)$", line)
            if not m:
                bpftest.fail(f"not a Prometheus sample line: {line!r}")
            values[m.group(1)] = float(m.group(2))
        return values

    # At least 3 s, up to 6 s while the workload has had too little CPU for 50 samples (a loaded
    # machine gives it a few percent of a CPU; its first samples wait for libc's debug file).
    started = time.time()
    cpu_at_start = bpftest.process_cpu_seconds(workload.pid)
    time.sleep(3)
    values = scrape()
    while values.get("otelprofd_samples_total", 0) < 50 and time.time() - started < 6:
        time.sleep(0.5)
        values = scrape()
    for name in ("otelprofd_samples_total", "otelprofd_perf_events_total", "otelprofd_cpu_seconds_total",
                 "otelprofd_resident_memory_bytes", 'otelprofd_export_requests_total{status="sent"}',
                 "otelprofd_export_queue_requests", 'otelprofd_symbolizer_failures_total{cause="no_mapping"}'):
        if name not in values:
            bpftest.fail(f"{name} missing from /metrics")
    # The verifier's work is a count, not a time: the stack-copy loop once cost 115,000 instructions
    # (90 ms of kernel CPU at every start) before its offset moved to map memory; about 4,600 with
    # trace correlation; 56,000 once the Python frame walk (up to 64 thread states, 96 frames) was
    # inlined in the sampler. In its own tail-called program with bpf_loop() (5.17+) the walk costs
    # about 1,300 (its bounded-loop form for kernels without bpf_loop() about 22,000), the Go label
    # reader, another tail-called program, 3,500: 11,700 in all at start, until both became runtimes'
    # parts with figures of their own (runtime_bpf.h), loaded at their runtime's first process (with
    # OTELPROFD_RUNTIMES_AT_START=1 with the core). The core: on_cpu_sample 6,400 and the process
    # life programs 500, whatever the walk's form; then packed samples (7,413) and the off-CPU end at
    # a thread's exit (7,558). This workload is neither Python nor Go: neither part is loaded (their
    # bounds are checked by suites python and go-labels, at their late process). The bound catches a
    # path (or a part back in the start) that grows again.
    verified = values.get("otelprofd_bpf_verified_instructions", 0)
    form = next((f for f in ("loop", "bounded", "off") if values.get(f'otelprofd_python_bpf_walk{{form="{f}"}}')), "?")
    bound = 8000
    print(f"BPF load: {verified:.0f} instructions verified, "
          f"{values.get('otelprofd_bpf_load_seconds', 0) * 1000:.1f} ms, Python walk: {form}")
    if verified > bound:
        bpftest.fail(f"the verifier processed {verified:.0f} instructions to load the programs (over {bound})")
    for runtime in ("python", "go"):
        for name in ("loaded", "verified_instructions"):
            key = f'otelprofd_bpf_runtime_{name}{{runtime="{runtime}"}}'
            if values.get(key, -1) != 0:
                bpftest.fail(f"{key} is {values.get(key)}: the {runtime} BPF part loaded without a {runtime} process")
    kernel = tuple(int(x) for x in re.findall(r"\d+", os.uname().release)[:2])
    if verified == 0 and kernel >= (5, 16):
        bpftest.fail("otelprofd_bpf_verified_instructions is 0 on a kernel that counts them (5.16+)")
    # Short of 50, the count must still match the CPU the workload had since sampling began (99 Hz
    # of it, half at least).
    cpu_s = bpftest.process_cpu_seconds(workload.pid) - cpu_at_start
    print(f"{values['otelprofd_samples_total']:.0f} samples counted; the workload had {cpu_s:.2f} s of CPU")
    if values["otelprofd_samples_total"] < bpftest.least_samples(50, 99, cpu_s):
        bpftest.fail(f"only {values['otelprofd_samples_total']} samples counted at 99 Hz for {cpu_s:.2f} s of "
                     "the workload's CPU")
    print(f"/metrics: {len(values)} series, {values['otelprofd_samples_total']:.0f} samples, "
          f"rss {values['otelprofd_resident_memory_bytes'] / 2**20:.1f} MiB")
    status, body = get("/ready")
    print(f"/ready after 3 s: {status} {body.strip()}")
    if status != 200:
        bpftest.fail("not ready while sampling works and the first delivery is not yet overdue")
    status, _ = get("/nowhere")
    if status != 404:
        bpftest.fail(f"/nowhere answered {status}")
    ready_at = time.time()

    # 100 idle connections (64 are kept open at most; the oldest idle make room): a scrape still
    # gets its answer at once.
    idle = []
    for _ in range(100):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        idle.append(s)
    answers = {}
    for path in ("/metrics", "/ready"):
        t0 = time.time()
        status, answers[path] = get(path)
        took = time.time() - t0
        print(f"{path} with 100 idle connections open: {status} in {took * 1000:.0f} ms")
        if status != 200 or took > 2:
            bpftest.fail(f"{path} answered {status} in {took:.1f} s with 100 idle connections open")
    m = re.search(r'otelprofd_metrics_connections_dropped_total\{reason="over_limit"\} (\d+)', answers["/metrics"])
    if not m or int(m.group(1)) < 36:
        bpftest.fail("over_limit drops not counted with 100 idle connections:\n" + answers["/metrics"][-600:])
    for s in idle:
        s.close()

    # Slowloris: one byte a second is cut at the 5 s deadline.
    slow = socket.create_connection(("127.0.0.1", port), timeout=5)
    t0 = time.time()
    closed_after = None
    for byte in b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 20:
        try:
            slow.send(bytes([byte]))
            readable, _, _ = select.select([slow], [], [], 1)
            if readable and slow.recv(4096) == b"":
                closed_after = time.time() - t0
                break
        except (BrokenPipeError, ConnectionResetError):
            closed_after = time.time() - t0
            break
    slow.close()
    print(f"slow client cut after {closed_after} s")
    if closed_after is None or not 4 <= closed_after <= 8:
        bpftest.fail(f"a client sending a byte a second was cut after {closed_after} s (deadline 5 s)")
    # A request head over 4 KiB is not read to its end.
    big = socket.create_connection(("127.0.0.1", port), timeout=2)
    try:
        big.sendall(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 8000)
        answer = big.recv(4096)
    except (BrokenPipeError, ConnectionResetError):
        answer = b""
    big.close()
    if answer:
        bpftest.fail(f"a request head over 4 KiB was answered: {answer[:80]!r}")
    _, text = get("/metrics")
    for reason in ("timeout", "request_too_large"):
        if f'otelprofd_metrics_connections_dropped_total{{reason="{reason}"}} 0' in text:
            bpftest.fail(f"the {reason} drop is not counted")

    time.sleep(max(0, 10 - (time.time() - ready_at)))
    status, body = get("/ready")
    print(f"/ready after 13 s with no collector: {status} {body.strip()}")
    if status != 503 or "no profile delivered" not in body:
        bpftest.fail("still ready although no profile was delivered for 10 s")
    _, text = get("/metrics")
    if "otelprofd_ready 0" not in text:
        bpftest.fail("otelprofd_ready is not 0 when /ready says not ready")
    rest = daemon.stderr.read()
    daemon.wait(timeout=60)
finally:
    workload.kill()
    workload.wait()
    if daemon.poll() is None:
        daemon.kill()
log = "".join(lines) + rest
summaries = [l for l in log.splitlines() if "stats: " in l]
print("\n".join(summaries[:3]))
if len(summaries) < 5:
    bpftest.fail(f"{len(summaries)} summary lines in 16 s with --stats-interval 1s")
if "not ready: no profile delivered" not in log:
    bpftest.fail("the summary does not say why the daemon is not ready")
if "reachable from the network" in log:
    bpftest.fail("warned about the network on a loopback address")

# Every address: a warning, once.
cmd = [bpftest.otelprofd(), "--pid", str(os.getpid()), "--metrics-address", f"0.0.0.0:{bpftest.free_port('0.0.0.0')}",
       "--duration", "1s", "-o", os.path.join(bpftest.tmpdir(), "x.folded")]
p = bpftest.run(cmd)
if p.stderr.count("reachable from the network") != 1:
    bpftest.fail("no single warning for a metrics server on 0.0.0.0")
print("PASS")
