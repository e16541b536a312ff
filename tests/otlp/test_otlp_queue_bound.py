#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Outage where the queue bound matters: a storm of short-lived processes (40 a second, each its
own resource) profiled at 499 Hz with a request every 100 ms makes ~10 KiB requests at ~90 KiB/s,
and the queue holds only 256 KiB (--queue-bytes; --queue-size is no limit here). At 100 a second
an ASan daemon fell behind on a busy CI machine (half its samples dropped, few requests made),
and the queue was never tested. The collector is
up, then killed for 20 s (several times what the queue holds), then restarted on the same port.
From /metrics, sampled every 0.25 s: otelprofd_export_queue_bytes never exceeds the bound and comes
near it (the bound was reached), requests were dropped as queue full, and requests arrive again
after the restart. RSS growth during the outage stays within that of an equally long healthy
period before it plus the bound and a slack (the request in flight, allocator noise).

RSS has little power on this machine: the storm itself grows the daemon by ~1-2 MiB per 20 s
(process table, symbolizer), about as much as an unbounded queue would in that time. The gauge is
the sharp check; the RSS check catches a leak or a queue that ignores its bound by megabytes."""
import os
import signal
import subprocess

import bpftest
import otlptest

BOUND = 256 * 1024
SLACK_KIB = 4 * 1024
DROPPED = 'otelprofd_export_requests_total{status="dropped_queue_full"}'
SENT = 'otelprofd_export_requests_total{status="sent"}'

bpftest.require_bpf()
out = bpftest.tmpdir()
port = otlptest.free_port()
storm = subprocess.Popen([os.environ["STORM_WORKLOAD"], "40", "120", "10"], stdout=subprocess.DEVNULL)
daemon = otlptest.Daemon(os.path.join(out, "otelprofd.log"), [
    "--pid", str(storm.pid), "--follow-children", "-F", "499", "--endpoint", f"127.0.0.1:{port}", "--insecure",
    "--export-interval", "100ms", "--timeout", "1s", "--queue-size", "100000", "--queue-bytes", str(BOUND),
    "--max-message-size", "128KiB"])
peak = {"bytes": 0, "requests": 0}


def track(m):
    peak["bytes"] = max(peak["bytes"], m.get("otelprofd_export_queue_bytes", 0))
    peak["requests"] = max(peak["requests"], m.get("otelprofd_export_queue_requests", 0))


try:
    first = otlptest.Collector(os.path.join(out, "first"), "--grpc-port", str(port), "--no-http")
    daemon.watch(5, on_sample=track)              # warm-up
    healthy_start = daemon.rss[-1]
    daemon.watch(20, on_sample=track)
    healthy_growth = daemon.rss[-1] - healthy_start
    first.stop(signal.SIGKILL)
    outage_start = daemon.rss[-1]
    before = daemon.metrics()
    daemon.watch(20, on_sample=track)
    outage_growth = max(daemon.rss[-80:]) - outage_start
    during = daemon.metrics()
    second = otlptest.Collector(os.path.join(out, "second"), "--grpc-port", str(port), "--no-http")
    waited = 0
    while daemon.metrics().get(SENT, 0) - during.get(SENT, 0) < 5 and waited < 45:
        daemon.watch(1, on_sample=track)
        waited += 1
    after = daemon.metrics()
    code = daemon.stop()
    stats = second.stop()
finally:
    daemon.kill()
    storm.kill()
    storm.wait()

print(daemon.log()[-2000:])
dropped = during.get(DROPPED, 0) - before.get(DROPPED, 0)
sent_after = after.get(SENT, 0) - during.get(SENT, 0)
print(f"queue: at most {peak['bytes'] / 1024:.0f} KiB in {peak['requests']:.0f} requests (bound {BOUND // 1024} KiB); "
      f"{dropped:.0f} dropped as queue full during the outage; {sent_after:.0f} sent after the restart")
print(f"RSS growth: {healthy_growth} KiB in 20 s healthy, {outage_growth} KiB in the 20 s outage")
if code != 0:
    bpftest.fail(f"otelprofd exited {code} after SIGTERM")
if peak["bytes"] > BOUND:
    bpftest.fail(f"otelprofd_export_queue_bytes reached {peak['bytes']:.0f} > the bound {BOUND}")
if peak["bytes"] < BOUND / 2:
    bpftest.fail("the queue never came near its bound: the outage did not test it")
if dropped <= 0:
    bpftest.fail("an outage far longer than the queue dropped nothing")
if sent_after < 5 or stats["accepted"] < 5 or stats["invalid"]:
    bpftest.fail(f"after the restart: {sent_after:.0f} sent, collector {stats}")
if outage_growth > max(healthy_growth, 0) + BOUND // 1024 + SLACK_KIB:
    bpftest.fail(f"RSS grew by {outage_growth} KiB during the outage ({healthy_growth} KiB in as long healthy)")
print("PASS")
