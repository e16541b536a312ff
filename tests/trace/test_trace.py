#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""End to end, with the real BPF sampler: otelprofd links the test application's samples to the span
each thread ran under (OTEP 4947), in its three TLS builds (executable, library linked at start,
dlopen'ed library), with the resource attributes of its process context (OTEP 4719) published a
second after start, and exports them to the test collector (decoded with otlp-dump); a second
otelprofd writes pprof at the same time. Asserted: each span's samples carry their own thread's
trace and span ids (>= 99%) and attributes (the last occurrence of a key wins), none where the thread
detached (NULL pointer or valid = 0), service.name from the process context, and the hostile thread's
records counted (oversized attributes, keys outside the map, a pointer into unmapped memory) and
harmless."""
import os
import re
import subprocess
import time

import bpftest
import otlptest
import pprofdecode

bpftest.require_bpf()
out = bpftest.tmpdir()
collector = otlptest.Collector(os.path.join(out, "collector"))
FN = re.compile(r"^(span_fn_\d|detached_fn|warmup_fn|hostile_\w+_fn)$")
# Samples of one function taken with no span, allowed: taken before the thread's context was first
# resolved, a few on a loaded machine (3 in one run with the two cores busy besides).
MAX_UNLINKED = 5


def expected(worker, span):
    trace = ("%02x" % (0x10 + worker)) * 15 + "01"
    return trace, "%02x%02x010203040506" % (0xa0 + worker, 0xb0 + span)


def function_of(sample):
    return next((f for f in sample["stack"] if FN.match(f)), None)


def check_variant(name, app_args, pprof_path=None):
    # trace-app SECONDS [LIBRARY]: the dlopen build names its library ("-": beside it)
    app = subprocess.Popen(app_args[:1] + ["7"] + [os.path.join(build, "libtracectx-dl.so")] * (len(app_args) > 1))
    daemon = otlptest.Daemon(os.path.join(out, f"{name}.log"), [
        "--pid", str(app.pid), "-F", "499", "--endpoint", f"127.0.0.1:{collector.grpc_port}", "--insecure",
        "--export-interval", "1s", "-d", "6s"])
    pprof = None
    if pprof_path:
        # Its log (-v: the symbolizer's and the process table's counters) is printed on a failure.
        pprof_log = open(os.path.join(out, f"{name}.pprof.log"), "w")
        pprof = subprocess.Popen([bpftest.otelprofd(), "--pid", str(app.pid), "-F", "499", "-d", "6s", "-v",
                                  "-o", pprof_path], stderr=pprof_log)
    try:
        daemon.watch(5.5)
        metrics = daemon.metrics()
        if daemon.stop() != 0:
            bpftest.fail(f"{name}: otelprofd failed:\n" + daemon.log()[-3000:])
        if pprof and pprof.wait(timeout=60) != 0:
            bpftest.fail(f"{name}: the pprof otelprofd failed")
    finally:
        daemon.kill()
        app.wait(timeout=30)
    if app.returncode != 0:
        bpftest.fail(f"{name}: the application exited {app.returncode}")
    series = {k: v for k, v in metrics.items() if "trace" in k}
    print(f"== {name}: {series}")
    for key in ('otelprofd_trace_rejected_total{reason="attrs_oversized"}',
                'otelprofd_trace_rejected_total{reason="unknown_key"}', "otelprofd_trace_read_errors_total",
                "otelprofd_trace_threads_resolved_total"):
        if metrics.get(key, 0) < 1:
            bpftest.fail(f"{name}: {key} is {metrics.get(key)}: the hostile records or the resolution were not seen")
    return app.pid


def check_samples(name, pid, summaries):
    resources = [r for s in summaries for r in s["resources"] if r["attributes"].get("process.pid") == pid]
    if not resources:
        bpftest.fail(f"{name}: no profile of the application")
    late = [r["attributes"].get("service.name") for r in resources]
    if late[-1] != "trace-app-svc" or resources[-1]["attributes"].get("service.version") != "1.2.3":
        bpftest.fail(f"{name}: service.name {late} (want trace-app-svc from the process context)")
    by = {}
    for s in otlptest.samples_of(summaries, pid):
        key = (s["attributes"].get("thread.name"), function_of(s))
        by.setdefault(key, []).append(s)
    for worker in range(3):
        for span in range(3):
            trace, span_id = expected(worker, span)
            samples = by.get((f"worker-{worker}", f"span_fn_{span}"), [])
            total = sum(s["count"] for s in samples)
            good = sum(s["count"] for s in samples if s.get("trace_id") == trace and s.get("span_id") == span_id and
                       s["attributes"].get("http.route") == f"/span/{span}" and
                       s["attributes"].get("worker.kind") == f"w{worker}")
            unlinked = sum(s["count"] for s in samples if "span_id" not in s)
            print(f"{name}: worker-{worker} span_fn_{span}: {good}/{total} linked right, {unlinked} not linked")
            for s in samples:
                if s.get("span_id") != span_id:
                    print("   wrong:", s)
            # No span: MAX_UNLINKED at most. Another span: 1% at most.
            if total < 20 or unlinked > MAX_UNLINKED or total - good - unlinked > 0.01 * total:
                bpftest.fail(f"{name}: worker-{worker} span_fn_{span}: {good} of {total} samples carry its span, "
                             f"{unlinked} none")
        detached = by.get((f"worker-{worker}", "detached_fn"), [])
        linked = sum(s["count"] for s in detached if "trace_id" in s)
        if not detached or linked:
            bpftest.fail(f"{name}: worker-{worker}: {linked} detached samples linked (of {len(detached)} entries)")
    for fn, want in (("hostile_oversized_fn", {}), ("hostile_badkey_fn", {"http.route": "/bad"})):
        samples = by.get(("hostile", fn), [])
        # Not linked, a sample has no attributes to check: MAX_UNLINKED at most, as for the spans above.
        unlinked = sum(s["count"] for s in samples if "span_id" not in s)
        if unlinked > MAX_UNLINKED:
            bpftest.fail(f"{name}: {fn}: {unlinked} samples not linked")
        for s in samples:
            extra = {k: v for k, v in s["attributes"].items() if k in ("http.route", "worker.kind")}
            if "span_id" in s and extra != want:
                bpftest.fail(f"{name}: {fn}: attributes {extra}, want {want}")
    if any("trace_id" in s for s in by.get(("hostile", "hostile_unmapped_fn"), [])):
        bpftest.fail(f"{name}: a sample whose record is unmapped is linked")


build = os.environ["TRACE_BUILD"]
pids = {}
pprof_path = os.path.join(out, "lib.pb.gz")
for name, args in (("exe", [os.path.join(build, "trace-app-exe")]),
                   ("lib", [os.path.join(build, "trace-app-lib")]),
                   ("dlopen", [os.path.join(build, "trace-app-dlopen"), "-"])):
    pids[name] = check_variant(name, args, pprof_path if name == "lib" else None)
stats = collector.stop()
if stats["invalid"]:
    bpftest.fail(f"{stats['invalid']} requests broke the format: {stats['last_error']}")
summaries = otlptest.dump(os.path.join(collector.out_dir, "*.pb"))
for s in summaries:
    if not s["valid"]:
        bpftest.fail(f"invalid request: {s['why']}")
for name, pid in pids.items():
    check_samples(name, pid, summaries)

# pprof: trace_id and span_id labels in lowercase hex, one label per attribute.
labelled = [(l, v) for l, leaf, v in pprofdecode.samples(pprof_path, frames=True)
            if l.get("thread_name") == "worker-1" and leaf and "span_fn_2" in leaf]
right = sum(v for l, v in labelled if (l.get("trace_id"), l.get("span_id")) == expected(1, 2) and
            l.get("http.route") == "/span/2")
total = sum(v for _, v in labelled)
wrong = sum(v for l, v in labelled if "trace_id" in l and (l.get("trace_id"), l.get("span_id")) != expected(1, 2))
print(f"pprof: worker-1 span_fn_2: {right}/{total} labelled right, {wrong} labelled wrong")
for l, v in labelled:
    if (l.get("trace_id"), l.get("span_id")) != expected(1, 2):
        print("   pprof not labelled right:", l, v)
# The format is what this checks (the OTLP run above holds the 99%): the second daemon starts later
# and its samples before its first look at the threads carry no span (57 of 61 right in one loaded
# ASan run); none may carry a wrong one.
if total < 10 or wrong or right < 0.85 * total:
    print("".join(line for line in open(os.path.join(out, "lib.pprof.log")) if "libbpf" not in line)[-4000:])
    bpftest.fail(f"pprof: {right} of {total} samples of worker-1 span_fn_2 carry its labels, {wrong} another span's")
print("ok")
