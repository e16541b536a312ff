#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""End to end: otelprofd samples the 60/30/10 workload with the real BPF sampler and exports it to
the test collector over gRPC, then over HTTP, both gzip-compressed (the collector checks each gRPC
request arrived compressed, on the sheet's method). Every request must pass the sheet's rules
(indices in range, zero elements first, no duplicates; checked by the collector and otlp-dump), and
carry the hot functions with their shares, the resource attributes (process, service.name,
OTEL_RESOURCE_ATTRIBUTES) and the sample attributes (thread.id, thread.name, cpu.logical_number)."""
import os
import subprocess

import bpftest
import otlptest

bpftest.require_bpf()
out = bpftest.tmpdir()
collector = otlptest.Collector(os.path.join(out, "collector"), "--expect-gzip")
workload = subprocess.Popen([os.environ["SPLIT_WORKLOAD"], "30"])
frequency = 499
try:
    bpftest.run([bpftest.otelprofd(), "--pid", str(workload.pid), "-F", str(frequency),
                 "--endpoint", f"127.0.0.1:{collector.grpc_port}", "--insecure",
                 "--export-interval", "1s", "-d", "4s"])
    env = dict(os.environ, OTEL_RESOURCE_ATTRIBUTES="deployment.environment=e2e,team=profiling",
               OTEL_SERVICE_NAME="split-svc", OTEL_EXPORTER_OTLP_COMPRESSION="gzip",
               OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
               OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{collector.http_port}")
    print("$ (OTEL_EXPORTER_OTLP_* for HTTP)", flush=True)
    p = subprocess.run([bpftest.otelprofd(), "--pid", str(workload.pid), "-F", str(frequency),
                        "--export-interval", "1s", "-d", "4s"], env=env, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    print(p.stderr[-3000:])
    if p.returncode != 0:
        bpftest.fail(f"otelprofd over HTTP exited {p.returncode}")
finally:
    workload.kill()
    workload.wait()
stats = collector.stop()

if stats["invalid"]:
    bpftest.fail(f"{stats['invalid']} requests broke the format: {stats['last_error']}")
if stats["grpc_requests"] < 3 or stats["http_requests"] < 3:
    bpftest.fail(f"expected at least 3 requests per transport (4 s at a 1 s interval): {stats}")
if stats["http_gzip"] != stats["http_requests"]:
    bpftest.fail("HTTP requests without Content-Encoding: gzip")
if stats["not_gzip"]:
    bpftest.fail(f"{stats['not_gzip']} gRPC requests were not gzip-compressed (the default)")
if stats["wrong_method"]:
    bpftest.fail("gRPC calls on another method than ProfilesService/Export")

for transport in ("grpc", "http"):
    summaries = otlptest.dump(os.path.join(collector.out_dir, f"*-{transport}.pb"))
    print(f"== {transport}: {len(summaries)} requests")
    for s in summaries:
        if not s["valid"]:
            bpftest.fail(f"{transport}: invalid request: {s['why']}")
        if s["mappings_without_build_id"]:
            bpftest.fail(f"{transport}: {s['mappings_without_build_id']} of {s['mappings']} mappings have no build id")
    resources = [r for s in summaries for r in s["resources"]]
    mine = [r for r in resources if r["attributes"].get("process.pid") == workload.pid]
    if len(mine) != len(resources) or not mine:
        bpftest.fail(f"{transport}: resources of other processes, or none of the workload")
    for r in mine:
        a = r["attributes"]
        if a.get("process.executable.name") != "split" or not a.get("process.executable.path", "").endswith("/split"):
            bpftest.fail(f"{transport}: resource attributes {a}")
        # service.name is each process's own (its OTEL_SERVICE_NAME, pod container, unit, or exe name):
        # the daemon's OTEL_SERVICE_NAME names otelprofd itself, never the processes it profiles.
        if transport == "http" and (a.get("service.name") != "split" or a.get("deployment.environment") != "e2e"
                                    or a.get("team") != "profiling"):
            bpftest.fail(f"http: service.name or OTEL_RESOURCE_ATTRIBUTES wrong: {a}")
        if len(r["scopes"]) != 1 or r["scopes"][0]["name"] != "otelprofd" or len(r["scopes"][0]["profiles"]) != 1:
            bpftest.fail(f"{transport}: scope {r['scopes']}")
        prof = r["scopes"][0]["profiles"][0]
        if (prof["sample_type"], prof["sample_unit"], prof["period_type"], prof["period_unit"]) != \
                ("samples", "count", "cpu", "nanoseconds") or prof["period"] != 10**9 // frequency:
            bpftest.fail(f"{transport}: profile types {prof}")
        if prof["duration_nano"] > 1.5e9:
            bpftest.fail(f"{transport}: a 1 s interval (+-10%) lasted {prof['duration_nano']} ns")
    covered = sum(r["scopes"][0]["profiles"][0]["duration_nano"] for r in mine)
    if not 3.5e9 <= covered <= 5e9:
        bpftest.fail(f"{transport}: the profiles of a 4 s run cover {covered} ns")
    samples = otlptest.samples_of(summaries, workload.pid)
    for s in samples:
        a = s["attributes"]
        if a.get("thread.id") != workload.pid or a.get("thread.name") != "split" or \
                not 0 <= a.get("cpu.logical_number", -1) < os.cpu_count():
            bpftest.fail(f"{transport}: sample attributes {a}")
        if "native" not in s["frame_types"] or set(s["frame_types"]) - {"native", "kernel"}:
            bpftest.fail(f"{transport}: frame types {s['frame_types']}")
    total = otlptest.check_split_shares(samples)
    print(f"{transport}: {total} samples in {len(summaries)} requests")
print("PASS")
