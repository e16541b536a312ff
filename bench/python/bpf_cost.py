#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The BPF program's cost per run for a C workload and a Python workload, for one or two otelprofd
builds (before and after a change), and the code-object cache's memory with many Python processes.

  bench/python/bpf_cost.py --build BUILD [--baseline BUILD] [--seconds 6] [--freq 99] [--runs 3]
  bench/python/bpf_cost.py --build BUILD --many 50 [--seconds 10]

Per run: otelprofd --pid WORKLOAD at --freq Hz; the on_cpu_sample program's run_time_ns and run_cnt
(kernel.bpf_stats_enabled=1) are read from bpftool one second after it attached and again
--seconds later: ns per run is the difference's ratio (every CPU's events, the workload's and the
others' filtered out early). Workloads: bench/cpu_bench (C, 2 threads) and tests/python/workload.py
under Debian's /usr/bin/python3 (3.11, 3 threads). --many: that many bench/python/many.py processes
(40 functions each), profiled together; prints the daemon's Python self-metrics and its RSS.
Run as root, on a machine as idle as can be (the figures are medians of --runs).
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def prog_stats():
    """{id: (run_time_ns, run_cnt)} of every loaded on_cpu_sample program."""
    progs = json.loads(subprocess.check_output(["bpftool", "-j", "prog", "show"]))
    return {p["id"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0)) for p in progs if p.get("name") == "on_cpu_sample"}


def start_daemon(build, pids, freq, seconds, tmp, extra=()):
    before = set(prog_stats())
    log = open(os.path.join(tmp, "daemon.log"), "w")
    d = subprocess.Popen([os.path.join(build, "daemon", "otelprofd"), "--pid", ",".join(map(str, pids)), "-F", str(freq),
                          "-d", f"{seconds + 60}s", "-o", os.path.join(tmp, "out.folded"), *extra], stderr=log)
    for _ in range(100):
        new = set(prog_stats()) - before
        if new:
            return d, new.pop()
        time.sleep(0.1)
    d.kill()
    sys.exit("bpf_cost: the daemon's program never appeared")


def one_run(build, workload, freq, seconds, tmp):
    work = subprocess.Popen(workload, stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    d, prog = start_daemon(build, [work.pid], freq, seconds, tmp)
    time.sleep(1)
    t0, n0 = prog_stats()[prog]
    time.sleep(seconds)
    t1, n1 = prog_stats()[prog]
    d.send_signal(signal.SIGINT)
    d.wait(timeout=60)
    work.kill()
    work.wait()
    return (t1 - t0) / max(n1 - n0, 1), n1 - n0


def many(build, count, seconds, tmp):
    works = [subprocess.Popen(["/usr/bin/python3", os.path.join(ROOT, "bench", "python", "many.py"), str(seconds + 6)])
             for _ in range(count)]
    time.sleep(1)
    port = 19900 + os.getpid() % 90
    d, _ = start_daemon(build, [w.pid for w in works], 99, seconds, tmp, ["--metrics-address", f"127.0.0.1:{port}"])
    time.sleep(seconds)
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    rss = int(next(line.split()[1] for line in open(f"/proc/{d.pid}/status") if line.startswith("VmRSS"))) / 1024
    d.send_signal(signal.SIGINT)
    d.wait(timeout=60)
    for w in works:
        w.kill()
        w.wait()
    print(f"Command: bench/python/bpf_cost.py {' '.join(sys.argv[1:])}")
    for line in metrics.splitlines():
        if line.startswith("otelprofd_python") and not line.endswith(" 0"):
            print("   ", line)
    print(f"    daemon RSS {rss:.1f} MiB")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--baseline")
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--freq", type=int, default=99)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--many", type=int, default=0)
    args = ap.parse_args()
    stats = "/proc/sys/kernel/bpf_stats_enabled"
    saved = open(stats).read().strip()
    open(stats, "w").write("1")
    tmp = tempfile.mkdtemp(prefix="otelprofd-bpf-cost-")
    try:
        if args.many:
            many(os.path.abspath(args.build), args.many, args.seconds, tmp)
            return
        builds = {"this tree": args.build} | ({"baseline": args.baseline} if args.baseline else {})
        workloads = {
            "C (cpu_bench, 2 threads)": [os.path.join(args.build, "bench", "cpu_bench"), "2", "100000"],
            "Python 3.11 (workload.py, 3 threads)": ["/usr/bin/python3", os.path.join(ROOT, "tests", "python", "workload.py"),
                                                      str(args.seconds + 30)],
        }
        rows = {}
        for r in range(args.runs):
            for name, build in (list(builds.items()) if r % 2 == 0 else list(builds.items())[::-1]):
                for wname, workload in workloads.items():
                    rows.setdefault((name, wname), []).append(one_run(build, workload, args.freq, args.seconds, tmp))
        print(f"Command: bench/python/bpf_cost.py {' '.join(sys.argv[1:])}\n")
        print("| otelprofd | workload | BPF ns / run (median) | runs of the program per measure |")
        print("|---|---|---|---|")
        for (name, wname), rs in sorted(rows.items()):
            print(f"| {name} | {wname} | {statistics.median(r[0] for r in rs):.0f} | "
                  f"{statistics.median(r[1] for r in rs):.0f} |")
    finally:
        open(stats, "w").write(saved)


if __name__ == "__main__":
    main()
