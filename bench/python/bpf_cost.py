#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The BPF program's cost per run for a C workload and a Python workload, for one or two otelprofd
builds (before and after a change), and the code-object cache's memory with many Python processes.

  bench/python/bpf_cost.py --build BUILD [--baseline BUILD] [--seconds 6] [--freq 99] [--runs 3] [--only C|Python]
  bench/python/bpf_cost.py --build BUILD --many 50 [--seconds 10]

Per run: otelprofd --pid WORKLOAD at --freq Hz, the two builds' daemons at once (on the same
workload process, so the machine's noise falls on both alike); the run_time_ns and run_cnt of the daemon's own BPF
programs (found by the program ids of its file descriptors, /proc/PID/fdinfo: other otelprofd runs on
the machine are not mixed in; kernel.bpf_stats_enabled=1) are read from bpftool one second after it
attached and again --seconds later. on_cpu_sample's figures include the Python walk it tail-calls
(a tail call runs inside its caller's accounting: py_walk_* count no runs of their own); ns / run
is over every CPU's events (the workload's and the others', filtered out early), ns / sample over
the samples of the workload only (the daemon's otelprofd_perf_events_total less
otelprofd_samples_skipped_total, from its /metrics). Workloads: bench/cpu_bench (C, 2 threads)
and tests/python/workload.py under Debian's /usr/bin/python3 (3.11, 3 threads). --many: that many
bench/python/many.py processes (40 functions each), profiled together; prints the daemon's Python
self-metrics and its RSS.
Run as root, on a machine as idle as can be (the figures are medians of --runs).
"""
import argparse
import glob
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

LOADAVG = []
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def daemon_progs(pid):
    """{program id: name} of the BPF programs process pid holds (its skeleton's fds)."""
    ids = set()
    for fd in glob.glob(f"/proc/{pid}/fdinfo/*"):
        try:
            ids |= {int(line.split()[1]) for line in open(fd) if line.startswith("prog_id:")}
        except OSError:
            pass
    progs = json.loads(subprocess.check_output(["bpftool", "-j", "prog", "show"]))
    return {p["id"]: p.get("name", "?") for p in progs if p["id"] in ids}


def prog_stats(ids):
    """{name: (run_time_ns, run_cnt)} of the programs ids (name: id)."""
    progs = json.loads(subprocess.check_output(["bpftool", "-j", "prog", "show"]))
    return {ids[p["id"]]: (p.get("run_time_ns", 0), p.get("run_cnt", 0)) for p in progs if p["id"] in ids}


def metrics(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^(otelprofd_[^ ]+) ([0-9.e+-]+)$", text, re.M)}


def kept_samples(values):
    skipped = sum(v for k, v in values.items() if k.startswith("otelprofd_samples_skipped_total"))
    return values.get("otelprofd_perf_events_total", 0) - skipped


def fail(daemon, tmp, why):
    daemon.kill()
    daemon.wait()
    sys.exit(f"bpf_cost: {why}; the daemon's log:\n" + open(os.path.join(tmp, "daemon.log")).read()[-3000:])


def start_daemon(build, pids, freq, seconds, tmp, port):
    """The daemon profiling pids, once its programs are attached (it has answered /metrics), and its
    programs ({id: name})."""
    log = open(os.path.join(tmp, "daemon.log"), "w")
    d = subprocess.Popen([os.path.join(build, "daemon", "otelprofd"), "--pid", ",".join(map(str, pids)), "-F", str(freq),
                          "-d", f"{seconds + 60}s", "-o", os.path.join(tmp, "out.folded"),
                          "--metrics-address", f"127.0.0.1:{port}"], stderr=log)
    for _ in range(300):
        if d.poll() is not None:
            fail(d, tmp, f"the daemon exited ({d.returncode}) before it attached")
        try:
            metrics(port)
            progs = daemon_progs(d.pid)
            if "on_cpu_sample" in progs.values():
                return d, progs
        except OSError:
            pass
        time.sleep(0.1)
    fail(d, tmp, "the daemon's on_cpu_sample program never appeared")


def stop_daemon(d):
    d.send_signal(signal.SIGINT)
    d.wait(timeout=60)


def one_run(builds, workload, freq, seconds, tmp):
    """{build: (ns / run of the sampler, runs, ns / sample of the workload, samples)}: every build's
    daemon profiles one workload process at once, so the machine's noise falls on them alike."""
    work = subprocess.Popen(workload, stdout=subprocess.DEVNULL)
    daemons = {}
    try:
        time.sleep(0.5)
        for k, build in enumerate(builds):
            port = 19900 + (os.getpid() + k) % 90
            os.makedirs(os.path.join(tmp, str(k)), exist_ok=True)
            daemons[build] = (port, *start_daemon(build, [work.pid], freq, seconds, os.path.join(tmp, str(k)), port))
        time.sleep(1)
        before = {b: (prog_stats(progs), metrics(port)) for b, (port, d, progs) in daemons.items()}
        time.sleep(seconds)
        after = {b: (prog_stats(progs), metrics(port)) for b, (port, d, progs) in daemons.items()}
        for b, (port, d, progs) in daemons.items():
            if d.poll() is not None:
                fail(d, os.path.join(tmp, str(builds.index(b))), "the daemon exited during the measure")
    finally:
        for port, d, progs in daemons.values():
            if d.poll() is None:
                stop_daemon(d)
        work.kill()
        work.wait()
    result = {}
    for b in builds:
        (s0, m0), (s1, m1) = before[b], after[b]
        walks = sum(s1[n][1] - s0[n][1] for n in s1 if n.startswith("py_walk"))
        if walks:
            print(f"note: the walk program counted {walks} runs of its own")
        t, n = (s1["on_cpu_sample"][i] - s0["on_cpu_sample"][i] for i in (0, 1))
        kept = kept_samples(m1) - kept_samples(m0)
        result[b] = (t / max(n, 1), n, t / max(kept, 1), kept)
    return result


def many(build, count, seconds, tmp):
    works = [subprocess.Popen(["/usr/bin/python3", os.path.join(ROOT, "bench", "python", "many.py"), str(seconds + 8)])
             for _ in range(count)]
    port = 19900 + os.getpid() % 90
    try:
        time.sleep(1)
        d, _ = start_daemon(build, [w.pid for w in works], 99, seconds, tmp, port)
        time.sleep(seconds)
        values = metrics(port)
        rss = int(next(line.split()[1] for line in open(f"/proc/{d.pid}/status") if line.startswith("VmRSS"))) / 1024
        stop_daemon(d)
    finally:
        for w in works:
            w.kill()
            w.wait()
    print(f"Command: bench/python/bpf_cost.py {' '.join(sys.argv[1:])}")
    print(f"    load average before: {' '.join(LOADAVG)}")
    for name, value in sorted(values.items()):
        if name.startswith("otelprofd_python") and value:
            print(f"    {name} {value:.0f}")
    print(f"    daemon RSS {rss:.1f} MiB")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--baseline")
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--freq", type=int, default=99)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--many", type=int, default=0)
    ap.add_argument("--only", choices=("C", "Python"), help="measure one workload only")
    args = ap.parse_args()
    stats = "/proc/sys/kernel/bpf_stats_enabled"
    saved = open(stats).read().strip()
    open(stats, "w").write("1")
    tmp = tempfile.mkdtemp(prefix="otelprofd-bpf-cost-")
    global LOADAVG
    LOADAVG = open("/proc/loadavg").read().split()[:3]
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
        workloads = {k: v for k, v in workloads.items() if not args.only or k.startswith(args.only)}
        rows = {}
        for r in range(args.runs):
            order = list(builds.items()) if r % 2 == 0 else list(builds.items())[::-1]
            for wname, workload in workloads.items():
                measured = one_run([b for _, b in order], workload, args.freq, args.seconds, tmp)
                for name, build in order:
                    rows.setdefault((name, wname), []).append(measured[build])
        print(f"Command: bench/python/bpf_cost.py {' '.join(sys.argv[1:])}")
        print(f"Load average before: {' '.join(LOADAVG)}, after: {' '.join(open('/proc/loadavg').read().split()[:3])}\n")
        print("| otelprofd | workload | BPF ns / run: median (each run) | program runs | BPF ns / workload sample: "
              "median (each run) | workload samples |")
        print("|---|---|---|---|---|---|")
        for (name, wname), rs in sorted(rows.items()):
            each = [", ".join(f"{r[i]:.0f}" for r in rs) for i in (0, 2)]
            print(f"| {name} | {wname} | {statistics.median(r[0] for r in rs):.0f} ({each[0]}) | "
                  f"{statistics.median(r[1] for r in rs):.0f} | {statistics.median(r[2] for r in rs):.0f} ({each[1]}) | "
                  f"{statistics.median(r[3] for r in rs):.0f} |")
    finally:
        open(stats, "w").write(saved)


if __name__ == "__main__":
    main()
