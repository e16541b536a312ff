#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The BPF cost per sample of a Go process whose goroutines carry pprof labels, against the same
program doing the same work without labels.

  bench/go/label_cost.py --build BUILD [--go GO] [--seconds 6] [--freq 99] [--runs 3]

The program is tests/integration/programs/golabels (an HTTP server on 127.0.0.1 labelling its work by
endpoint), built stripped by GO (default: scripts/go-toolchain.sh, Go 1.26) into a temporary
directory. Per run: the labelled and the unlabelled process run at once, each under a daemon of its
own (--pid, --freq Hz), so the machine's noise falls on both alike; each daemon's on_cpu_sample
run_time_ns and run_cnt (kernel.bpf_stats_enabled=1; its programs found by its file descriptors, as
bench/python/bpf_cost.py does) are read one second after it attached and again --seconds later. The
label reader is tail-called, so its time is inside on_cpu_sample's. ns / sample divides by the
workload's samples (perf events less skipped, from the daemon's /metrics). Medians of --runs.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "python"))
from bpf_cost import kept_samples, metrics, prog_stats, start_daemon, stop_daemon  # noqa: E402


def build_program(go, tmp):
    path = os.path.join(tmp, "golabels")
    env = dict(os.environ, GOCACHE=os.path.join(tmp, "gocache"), GOTOOLCHAIN="local", GOPROXY="off",
               GO111MODULE="off", GOFLAGS="", CGO_ENABLED="0")
    subprocess.run([go, "build", "-ldflags=-s -w", "-o", path, "."], check=True, env=env,
                   cwd=os.path.join(ROOT, "tests", "integration", "programs", "golabels"))
    return path


def one_run(build, program, freq, seconds, tmp):
    """{variant: (ns / run, ns / workload sample, samples, labelled samples)}."""
    works = {v: subprocess.Popen([program, str(seconds + 30)] + (["nolabels"] if v == "without" else []))
             for v in ("with", "without")}
    daemons = {}
    try:
        time.sleep(1)
        for k, (v, w) in enumerate(works.items()):
            port = 19800 + (os.getpid() + k) % 90
            os.makedirs(os.path.join(tmp, v), exist_ok=True)
            daemons[v] = (port, *start_daemon(build, [w.pid], freq, seconds, os.path.join(tmp, v), port))
        time.sleep(1)
        before = {v: (prog_stats(progs), metrics(port)) for v, (port, d, progs) in daemons.items()}
        time.sleep(seconds)
        after = {v: (prog_stats(progs), metrics(port)) for v, (port, d, progs) in daemons.items()}
    finally:
        for port, d, progs in daemons.values():
            if d.poll() is None:
                stop_daemon(d)
        for w in works.values():
            w.kill()
            w.wait()
    out = {}
    for v in works:
        (s0, m0), (s1, m1) = before[v], after[v]
        t, n = (s1["on_cpu_sample"][i] - s0["on_cpu_sample"][i] for i in (0, 1))
        kept = kept_samples(m1) - kept_samples(m0)
        key = 'otelprofd_go_label_reads_total{result="labelled"}'
        out[v] = (t / max(n, 1), t / max(kept, 1), kept, m1.get(key, 0) - m0.get(key, 0))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--go")
    ap.add_argument("--seconds", type=int, default=6)
    ap.add_argument("--freq", type=int, default=99)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    go = a.go or subprocess.check_output([os.path.join(ROOT, "scripts", "go-toolchain.sh")], text=True).strip()
    with open("/proc/sys/kernel/bpf_stats_enabled", "r+") as f:
        was = f.read().strip()
        f.seek(0)
        f.write("1")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            program = build_program(go, tmp)
            runs = [one_run(os.path.abspath(a.build), program, a.freq, a.seconds, tmp) for _ in range(a.runs)]
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(was)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")
    print("| goroutines | BPF ns / run: median (runs) | BPF ns / workload sample: median | samples (labelled) |")
    print("|---|---|---|---|")
    for v in ("with", "without"):
        per_run = [r[v][0] for r in runs]
        per_sample = [r[v][1] for r in runs]
        print(f"| {v} labels | {statistics.median(per_run):,.0f} ({', '.join(f'{x:.0f}' for x in per_run)}) | "
              f"{statistics.median(per_sample):,.0f} | {sum(r[v][2] for r in runs):.0f} "
              f"({sum(r[v][3] for r in runs):.0f}) |")


if __name__ == "__main__":
    main()
