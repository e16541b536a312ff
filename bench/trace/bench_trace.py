#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Trace correlation's cost (issue 16): the BPF program's run time per sample (kernel.bpf_stats_enabled,
set for the run and restored after) on a process without a context and on one whose threads publish
one, and the bytes per sample an OTLP request takes with and without links.

  bench/trace/bench_trace.py BUILD [BEFORE_OTELPROFD]

BUILD is a build directory of this tree (its otelprofd, test collector, workloads and trace-app-lib);
BEFORE_OTELPROFD an otelprofd built without trace correlation, for the before/after line."""
import glob
import json
import os
import subprocess
import sys
import threading
import time

build = os.path.abspath(sys.argv[1])
before = sys.argv[2] if len(sys.argv) > 2 else None
sys.path[:0] = [os.path.join(os.path.dirname(__file__), "..", "..", "tests", "integration"),
                os.path.join(os.path.dirname(__file__), "..", "..", "tests", "otlp")]
os.environ.setdefault("OTELPROFD", os.path.join(build, "daemon", "otelprofd"))
os.environ.setdefault("TEST_COLLECTOR", os.path.join(build, "tests", "otlp", "test-collector"))
import bpftest  # noqa: E402
import otlptest  # noqa: E402

SPLIT = os.path.join(build, "tests", "workloads", "split")
APP = os.path.join(build, "tests", "trace", "trace-app-lib")
SECONDS = 8


def prog_ids(pid):
    """Ids of the BPF programs pid holds (its fds' fdinfo)."""
    ids = set()
    for fd in glob.glob(f"/proc/{pid}/fdinfo/*"):
        try:
            for line in open(fd):
                if line.startswith("prog_id:"):
                    ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def bpf_ns_per_sample(otelprofd, target, extra=()):
    """Run otelprofd on one target for SECONDS; the perf event program's ns per run."""
    app = subprocess.Popen([target, str(SECONDS + 4)], stdout=subprocess.DEVNULL)
    d = subprocess.Popen([otelprofd, "--pid", str(app.pid), "-F", "999", "-d", f"{SECONDS}s", "-o",
                          "/tmp/otelprofd-bench-trace.folded", *extra], stderr=subprocess.DEVNULL)
    time.sleep(SECONDS - 1)
    progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], stdout=subprocess.PIPE).stdout)
    mine = [p for p in progs if p.get("name") == "on_cpu_sample" and p["id"] in prog_ids(d.pid)]
    d.wait()
    app.kill()
    app.wait()
    if not mine or not mine[0].get("run_cnt"):
        return None, 0
    return mine[0]["run_time_ns"] / mine[0]["run_cnt"], mine[0]["run_cnt"]


def line_time(stream, needle, found):
    """Read stream to its end; found[needle] = time.monotonic() of the first line holding needle."""
    for line in stream:
        if needle in line and needle not in found:
            found[needle] = time.monotonic()


def pickup_seconds(publish_after=4.0):
    """Seconds from the application publishing its process context, late, to otelprofd finding it
    (its -v line), the application being sampled all along at 99 Hz."""
    env = dict(os.environ, TRACE_APP_PUBLISH_AFTER=str(publish_after))
    app = subprocess.Popen([APP, str(publish_after + 4)], stdout=subprocess.PIPE, text=True, env=env)
    d = subprocess.Popen([os.environ["OTELPROFD"], "-v", "--pid", str(app.pid), "-F", "99", "-d",
                          f"{publish_after + 2}s", "-o", "/tmp/otelprofd-bench-trace.folded"],
                         stderr=subprocess.PIPE, text=True)
    found = {}
    readers = [threading.Thread(target=line_time, args=(app.stdout, "trace-app: published", found)),
               threading.Thread(target=line_time, args=(d.stderr, "process context found", found))]
    for r in readers:
        r.start()
    d.wait()
    app.kill()
    app.wait()
    for r in readers:
        r.join()
    if len(found) != 2:
        return None
    return found["process context found"] - found["trace-app: published"]


def wire_bytes(extra=()):
    """Uncompressed request bytes per sample of the trace application, exported for SECONDS."""
    out = bpftest.tmpdir()
    c = otlptest.Collector(os.path.join(out, "c"))
    app = subprocess.Popen([APP, str(SECONDS + 4)])
    time.sleep(3)  # its context is published and its spans run
    subprocess.run([os.environ["OTELPROFD"], "--pid", str(app.pid), "-F", "999", "-d", f"{SECONDS}s",
                    "--endpoint", f"127.0.0.1:{c.grpc_port}", "--insecure", "--compression", "none",
                    "--export-interval", "2s", *extra], stderr=subprocess.DEVNULL)
    app.kill()
    app.wait()
    stats = c.stop()
    size = sum(os.path.getsize(f) for f in glob.glob(os.path.join(out, "c", "*.pb")))
    return size / max(stats["samples"], 1), stats["samples"]


old = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
open("/proc/sys/kernel/bpf_stats_enabled", "w").write("1")
try:
    now = os.environ["OTELPROFD"]
    late = sorted(s for s in (pickup_seconds() for _ in range(5)) if s is not None)
    print(f"late context found after (s): median {late[len(late) // 2]:.2f}, max {late[-1]:.2f} "
          f"(runs {', '.join(f'{s:.2f}' for s in late)})" if late else "late context: never found", flush=True)
    if os.environ.get("BENCH_PICKUP_ONLY"):
        sys.exit(0)
    for label, extra in (("with links", ()), ("--no-trace-context", ("--no-trace-context",))):
        per, n = wire_bytes(extra)
        print(f"OTLP bytes/sample (uncompressed) {label}: {per:.2f} ({n} samples)", flush=True)
    if os.environ.get("BENCH_WIRE_ONLY"):
        sys.exit(0)
    for label, binary, target, extra in (
            ("without context (split), this tree", now, SPLIT, ()),
            ("without context (split), before", before, SPLIT, ()),
            ("without context (split), --no-trace-context", now, SPLIT, ("--no-trace-context",)),
            ("with context (trace-app-lib), this tree", now, APP, ()),
            ("with context (trace-app-lib), --no-trace-context", now, APP, ("--no-trace-context",))):
        if not binary:
            continue
        runs = [bpf_ns_per_sample(binary, target, extra) for _ in range(3)]
        ns = sorted(r[0] for r in runs if r[0])
        print(f"BPF ns/sample {label}: median {ns[len(ns) // 2]:.0f} (runs {', '.join(f'{x:.0f}' for x in ns)}; "
              f"{runs[0][1]} samples each)", flush=True)
finally:
    open("/proc/sys/kernel/bpf_stats_enabled", "w").write(old)
