#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Bad peers: otelprofd (real sampler) sends, over gRPC and then over HTTP, to a collector that
answers later than --timeout, then to a port that answers random bytes instead of HTTP/2 or HTTP,
and finally to a good collector on the same port (HTTP first meets a collector that answers 200
with a body that is not protobuf). Throughout, the daemon must keep sampling (its samples counter grows on
/metrics), count the failed sends as retries, not crash, keep its RSS bounded, and once the good
collector is there its requests must arrive, valid. SIGTERM then ends it with exit 0."""
import os
import signal
import subprocess

import bpftest
import otlptest

bpftest.require_bpf()
out = bpftest.tmpdir()
workload = subprocess.Popen([os.environ["SPLIT_WORKLOAD"], "120"])


def counter(m, name):
    return m.get(name, 0.0)


SENT = 'otelprofd_export_requests_total{status="sent"}'


def phase(daemon, name, seconds, collector_dir, *collector_args, until_sent=0, cap=45):
    """Run a collector with collector_args on the daemon's port for `seconds` (with until_sent, until
    that many more requests were sent, at most cap seconds: a request waiting since the bad peers
    is retried after a backoff that grew to 8-16 s); its counters and the daemon's metrics before
    and after."""
    before = daemon.metrics()
    c = otlptest.Collector(os.path.join(out, collector_dir), *collector_args)
    daemon.watch(seconds)
    waited = seconds
    while counter(daemon.metrics(), SENT) - counter(before, SENT) < until_sent and waited < cap:
        daemon.watch(1)
        waited += 1
    after = daemon.metrics()
    stats = c.stop()
    grew = counter(after, "otelprofd_samples_total") - counter(before, "otelprofd_samples_total")
    retries = counter(after, "otelprofd_export_retries_total") - counter(before, "otelprofd_export_retries_total")
    sent = counter(after, SENT) - counter(before, SENT)
    print(f"== {name}: {grew:.0f} samples, {retries:.0f} retries, {sent:.0f} sent; collector {stats}", flush=True)
    if grew < 100:
        bpftest.fail(f"{name}: the daemon stopped sampling ({grew:.0f} samples in {waited} s)")
    return stats, retries, sent


def run(transport):
    port = otlptest.free_port()
    grpc = transport == "grpc"
    where = ["--grpc-port", str(port), "--no-http"] if grpc else ["--http-port", str(port), "--no-grpc"]
    endpoint = f"127.0.0.1:{port}" if grpc else f"http://127.0.0.1:{port}"
    daemon = otlptest.Daemon(os.path.join(out, f"otelprofd-{transport}.log"), [
        "--pid", str(workload.pid), "-F", "199", "--endpoint", endpoint, "--insecure",
        "--protocol", "grpc" if grpc else "http/protobuf", "--export-interval", "500ms",
        "--timeout", "1s", "--queue-size", "4"])
    try:
        daemon.watch(1)
        warm = len(daemon.rss)
        if not grpc:
            # First, while no request waits in a long backoff.
            stats, _, sent = phase(daemon, "http: 200 with a garbage body", 4, "http-garbage", *where,
                                   "--behaviour", "garbage")
            # The collector took the data; only its answer is garbage: sent, not resent.
            if stats["accepted"] < 1 or sent < 1:
                bpftest.fail("http: the collector answering garbage received nothing")
        stats, retries, _ = phase(daemon, f"{transport}: slow collector", 6, f"{transport}-slow", *where,
                                  "--behaviour", "slow", "--retry-ms", "3000")
        if stats["slow"] < 1 or retries < 1:
            bpftest.fail(f"{transport}: the slow collector got no request, or its timeouts were not retried")
        # The request waiting since the slow phase is retried with a growing backoff (4-8 s by now).
        stats, retries, sent = phase(daemon, f"{transport}: random bytes", 12, f"{transport}-raw", *where,
                                     "--raw-garbage")
        if stats["garbage_connections"] < 1 or retries < 1 or sent:
            bpftest.fail(f"{transport}: the random-bytes peer was not tried, or its failures were not retried")
        stats, _, sent = phase(daemon, f"{transport}: good collector", 4, f"{transport}-good", *where,
                               until_sent=4)
        if stats["accepted"] < 3 or stats["invalid"] or sent < 3:
            bpftest.fail(f"{transport}: after the bad peers, the good collector got {stats}")
        code = daemon.stop()
    finally:
        daemon.kill()
    log = daemon.log()
    print(log[-2000:])
    if code != 0:
        bpftest.fail(f"{transport}: otelprofd exited {code} after SIGTERM")
    if "Sanitizer" in log or "runtime error" in log:
        bpftest.fail(f"{transport}: sanitizer report in the log")
    samples = otlptest.samples_of(otlptest.dump(os.path.join(out, f"{transport}-good", "*.pb")), workload.pid)
    if sum(s["count"] for s in samples) < 100:
        bpftest.fail(f"{transport}: too few samples reached the good collector")
    base, peak = daemon.rss[warm - 1], max(daemon.rss[warm:])
    print(f"{transport}: RSS {base} KiB after warm-up, {peak} KiB at most after")
    if peak - base > 20 * 1024:
        bpftest.fail(f"{transport}: RSS grew by {(peak - base) // 1024} MiB among bad peers")


try:
    run("grpc")
    run("http")
finally:
    workload.send_signal(signal.SIGKILL)
    workload.wait()
print("PASS")
