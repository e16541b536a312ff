#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Outage: otelprofd (real sampler, gRPC) starts before the collector exists, the collector comes,
is killed mid-stream, stays down for longer than the queue holds (--queue-size 2 at a 0.5 s
interval), and is restarted on the same port. Requests must arrive again after the restart, the
queue bound must have held (dropped counter > 0), RSS must stay bounded, and SIGTERM must end the
daemon with exit 0 within its flush deadline. Requests here are ~3 KiB, so the RSS check only
catches gross leaks; test_otlp_queue_bound.py makes the byte bound matter."""
import os
import re
import signal
import subprocess
import time

import bpftest
import otlptest

bpftest.require_bpf()
out = bpftest.tmpdir()
port = otlptest.free_port()
workload = subprocess.Popen([os.environ["SPLIT_WORKLOAD"], "60"])
log_path = os.path.join(out, "otelprofd.log")
cmd = [bpftest.otelprofd(), "--pid", str(workload.pid), "-F", "199", "--endpoint", f"127.0.0.1:{port}",
       "--insecure", "--export-interval", "500ms", "--queue-size", "2", "--timeout", "1s"]
print("$", " ".join(cmd), flush=True)
daemon = subprocess.Popen(cmd, stderr=open(log_path, "w"), env=otlptest.rss_env())
rss = []


def watch(seconds):
    end = time.time() + seconds
    while time.time() < end:
        if daemon.poll() is not None:
            bpftest.fail(f"otelprofd exited {daemon.returncode} during the outage test")
        rss.append(otlptest.rss_kib(daemon.pid))
        time.sleep(0.25)


try:
    watch(2)                      # no collector at all
    first = otlptest.Collector(os.path.join(out, "first"), "--grpc-port", str(port), "--no-http")
    watch(4)
    warm = len(rss)               # RSS from here on must stay bounded
    first.stop(signal.SIGKILL)    # killed mid-stream
    watch(8)                      # 16 intervals down: far more than the queue holds
    second = otlptest.Collector(os.path.join(out, "second"), "--grpc-port", str(port), "--no-http")
    watch(12)                     # the exporter's backoff and gRPC's reconnect bring it back
    start = time.time()
    daemon.send_signal(signal.SIGTERM)
    code = daemon.wait(timeout=30)
    took = time.time() - start
    stats = second.stop()
finally:
    if daemon.poll() is None:
        daemon.kill()
    workload.kill()
    workload.wait()

log = open(log_path).read()
print(log[-3000:])
if code != 0:
    bpftest.fail(f"otelprofd exited {code} after SIGTERM")
if took > 15:
    bpftest.fail(f"the shutdown flush took {took:.1f} s")
first_requests = len(os.listdir(os.path.join(out, "first"))) - 1  # minus the ports file
print(f"first collector saved {first_requests} requests; second: {stats}")
if first_requests < 2:
    bpftest.fail("the collector that came after the daemon received almost nothing")
if stats["accepted"] < 4 or stats["invalid"]:
    bpftest.fail(f"after the restart: {stats}")
m = re.search(r"Export: (\d+) requests? sent .*dropped: (\d+) queue full, (\d+) after retries, (\d+) refused, "
              r"(\d+) at shutdown", log)
if not m:
    bpftest.fail("no export summary in the log")
sent, queue_full, retries_dropped, refused, shutdown = (int(x) for x in m.groups())
print(f"sent {sent}, dropped: {queue_full} queue full, {retries_dropped} after retries, {shutdown} at shutdown")
if queue_full == 0:
    bpftest.fail("an outage longer than the queue dropped nothing: the bound did not hold")
if refused:
    bpftest.fail("requests were refused as permanent errors")
# Samples from after the restart arrived (the last interval included, flushed at SIGTERM).
later = otlptest.samples_of(otlptest.dump(os.path.join(out, "second", "*.pb")), workload.pid)
if sum(s["count"] for s in later) < 100:
    bpftest.fail("too few samples after the restart")
base = rss[warm - 1]
peak = max(rss[warm:])
print(f"RSS: {base} KiB before the outage, {peak} KiB at most after")
if peak - base > 20 * 1024:
    bpftest.fail(f"RSS grew by {(peak - base) // 1024} MiB during the outage")
print("PASS")
