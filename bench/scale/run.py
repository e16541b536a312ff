#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Issue 30's scale scenario: 20,000 samples a second for 60 s (every CPU busy, sampled at 10,000 Hz
each on this 2-CPU machine: what a 200-core host gives at 99 Hz). Each otelprofd binary given runs
once per round, in an order rotated from round to round, over the same workload (bench/cpu_bench, one
busy thread per CPU, started before the daemon and killed after it):

  otelprofd -F HZ --duration SECONDS -o FILE.folded            (whole host, the default)
  otelprofd -F HZ --duration SECONDS --pid WORKLOAD -o ...     (--pid: the workload only)
  ... --endpoint 127.0.0.1:PORT --insecure --export-interval 10s instead of -o (--export: OTLP to the
      test collector, tests/otlp/test-collector of --build)

and reports per run: perf events a second (kept + dropped, over the duration), samples kept and
dropped (the daemon's end-of-run line: ring buffer full, stack table full, and the rest), the bytes a
sample took in the ring buffer (-v's counters), the daemon's CPU (user +
system of its whole life, start-up and final profile included: wait4; /proc/PID/stat's last reading
before the exit is kept in the JSON as cpu_proc_s), in % of one CPU over the duration, and its peak
RSS (VmHWM from /proc/PID/status, sampled every 250 ms, and wait4's ru_maxrss: the larger). A Markdown table goes to stdout (medians over rounds, and every
round), the raw figures to --json.

  bench/scale/run.py --otelprofd NAME=PATH [--otelprofd NAME=PATH ...] [--build build] [--rounds 1]
                     [--seconds 60] [--hz 10000] [--pid] [--export] [--nice N] [--workload-nice N]
                     [--own-session] [--timeline] [--json OUT.json]
                     [--extra NAME=ARGS ...]

--extra adds arguments to one binary's runs (e.g. --extra "main=--ringbuf-size 8192").
Run as root (BPF). Other load on the machine changes the figures: the load average is printed.
"""
import argparse
import json
import os
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import run as bench  # noqa: E402  (bench/run.py: the test collector)

CLK_TCK = os.sysconf("SC_CLK_TCK")
KEPT = re.compile(r"(\d+) samples kept, (\d+) dropped \(ring buffer full (\d+), stack table full (\d+)")
# -v's line of where the ring buffer's drops happened (builds since issue 30's drops8 branch).
DURING = re.compile(r"loop: ring buffer full for (\d+) samples at the start, (\d+) between turns, in turns (\d+) "
                    r"reading, (\d+) replaying, (\d+) building, (\d+) else \((\d+) of them in turns over \d+ ms\); "
                    r"the ring went unread ([\d.]+) ms at most")
RING_FULL_METRIC = re.compile(r'^otelprofd_samples_dropped_total\{reason="ring_buffer_full"\} (\d+)', re.M)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def proc_cpu_s(pid):
    """User + system CPU seconds of a live process (/proc/PID/stat), or None once it is gone."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_hwm_kib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


def scrape_ring_full(port):
    """The daemon's ring_buffer_full counter from its /metrics (updated once a second), or None."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as c:
            c.sendall(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            data = b""
            while chunk := c.recv(65536):
                data += chunk
    except OSError:
        return None
    m = RING_FULL_METRIC.search(data.decode(errors="replace"))
    return int(m.group(1)) if m else None


def own_session():
    """A session, hence an autogroup, of its own (as a systemd service has a cgroup of its own): with
    autogroup scheduling a nice value counts only inside its session's group."""
    os.setsid()


def one_run(name, path, extra, args, tmp, port):
    """Run one binary over a fresh workload: a dict of figures."""
    work = subprocess.Popen([os.path.join(args.build, "bench", "cpu_bench"), str(os.cpu_count()), "100000000"],
                            stdout=subprocess.DEVNULL,
                            preexec_fn=(lambda: os.nice(args.workload_nice)) if args.workload_nice else None)
    metrics_port = None
    if args.timeline:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            metrics_port = sock.getsockname()[1]
    time.sleep(0.5)
    cmd = [path, "-v", "-F", str(args.hz), "--duration", f"{args.seconds}s"]
    if args.pid:
        cmd += ["--pid", str(work.pid)]
    if port:
        cmd += ["--endpoint", f"127.0.0.1:{port}", "--insecure", "--export-interval", "10s"]
    else:
        cmd += ["-o", os.path.join(tmp, f"{name}.folded")]
    if metrics_port:
        cmd += ["--metrics-address", f"127.0.0.1:{metrics_port}"]
    cmd += extra
    out = os.path.join(tmp, f"{name}.log")
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    def prepare():
        if args.own_session:
            own_session()
        if args.nice:
            os.nice(args.nice)
    daemon = subprocess.Popen(cmd, stdout=open(out, "w"), stderr=subprocess.STDOUT, preexec_fn=prepare)
    cpu, hwm = 0.0, 0
    timeline = []  # (seconds since the start, ring_buffer_full) with --timeline
    while True:
        pid, status, usage = os.wait4(daemon.pid, os.WNOHANG)
        if pid:
            daemon.returncode = os.waitstatus_to_exitcode(status)
            break
        c, h = proc_cpu_s(daemon.pid), proc_hwm_kib(daemon.pid)
        cpu = c if c is not None else cpu
        hwm = h if h is not None else hwm
        if metrics_port:
            v = scrape_ring_full(metrics_port)
            if v is not None:
                timeline.append((round(time.monotonic() - t0, 2), v))
        time.sleep(0.25)
    wall = time.monotonic() - t0
    work.send_signal(signal.SIGKILL)
    work.wait()
    text = open(out).read()
    m = KEPT.search(text)
    if not m:
        raise RuntimeError(f"{name}: no end-of-run line in {out} (exit {daemon.returncode})")
    kept, dropped, ring, table = (int(x) for x in m.groups())
    total = usage.ru_utime + usage.ru_stime
    # Bytes a sample took in the ring buffer: packed ones say so; whole ones are the struct (2,128
    # bytes), the window's header (32) and the stack bytes.
    packed = re.search(r"ring buffer: \d+ samples packed, (\d+) bytes per sample", text)
    stack = re.search(r"stack bytes received \((\d+) per sample\)", text)
    record_bytes = int(packed.group(1)) if packed else (2128 + 32 + int(stack.group(1)) if stack else None)
    during = DURING.search(text)
    during = dict(zip(("start", "between", "read", "replay", "build", "other", "long", "unread_ms"),
                      (float(x) for x in during.groups()))) if during else None
    # Drops in the run's first 5 s (start-up, first windows, first module opens) by the timeline.
    early = next((v for t, v in timeline if t >= 5), None)
    return dict(name=name, kept=kept, dropped=dropped, ring_full=ring, table_full=table, record_bytes=record_bytes,
                events_per_s=(kept + dropped) / args.seconds, cpu_s=total, cpu_proc_s=cpu,
                cpu_pct=100 * total / args.seconds, wall_s=wall, hwm_mib=max(hwm, usage.ru_maxrss) / 1024,
                load1=(load0 + os.getloadavg()[0]) / 2, exit=daemon.returncode, command=shlex.join(cmd),
                during=during, timeline=timeline, dropped_first_5s=early)


def table(runs, names):
    rows = ["| otelprofd | perf events / s | samples kept | dropped (ring buffer full, stack table full) | dropped % | "
            "bytes / sample in the ring buffer | daemon CPU (user+sys), % of one CPU | peak RSS MiB | load average |",
            "|---|---|---|---|---|---|---|---|---|"]

    def med(k, key):
        return statistics.median(r[key] for r in runs if r["name"] == k)
    for k in names:
        mine = [r for r in runs if r["name"] == k]
        drop = [100 * r["dropped"] / max(r["kept"] + r["dropped"], 1) for r in mine]
        rows.append(f"| {k} | {med(k, 'events_per_s'):,.0f} | {med(k, 'kept'):,.0f} | {med(k, 'dropped'):,.0f} "
                    f"({med(k, 'ring_full'):,.0f}, {med(k, 'table_full'):,.0f}) | {statistics.median(drop):.2f}% | "
                    f"{statistics.median(r['record_bytes'] or 0 for r in mine):,.0f} | {med(k, 'cpu_pct'):.1f}% | "
                    f"{med(k, 'hwm_mib'):.1f} | {med(k, 'load1'):.1f} |")
    rows += ["", "Every run (ring buffer drops by what the loop was doing, from -v: at the start, between "
             "turns, in turns reading / replaying / building / else, of those in turns over 100 ms; the "
             "longest time the ring went unread; with --timeline, drops in the first 5 s):", "",
             "| round | otelprofd | kept | dropped | CPU s | peak RSS MiB | load | start | between | read | replay "
             "| build | else | in long turns | unread max ms | first 5 s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        d = r.get("during")
        cells = " | ".join(f"{d[k]:,.0f}" for k in ("start", "between", "read", "replay", "build", "other", "long")) + \
            f" | {d['unread_ms']:.0f}" if d else " | ".join(["-"] * 8)
        early = r.get("dropped_first_5s")
        rows.append(f"| {r['round']} | {r['name']} | {r['kept']:,} | {r['dropped']:,} | {r['cpu_s']:.2f} | "
                    f"{r['hwm_mib']:.1f} | {r['load1']:.1f} | {cells} | {early if early is not None else '-'} |")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--otelprofd", action="append", required=True, metavar="NAME=PATH")
    ap.add_argument("--extra", action="append", default=[], metavar="NAME=ARGS")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="a build with bench/cpu_bench")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--hz", type=int, default=10000)
    ap.add_argument("--pid", action="store_true", help="profile the workload only (--pid)")
    ap.add_argument("--export", action="store_true", help="export OTLP to the test collector")
    ap.add_argument("--nice", type=int, default=0, help="the daemon's nice value (e.g. -10 on a machine "
                    "shared with other work: it then gets the CPU it asks for)")
    ap.add_argument("--workload-nice", type=int, default=0, help="the workload's nice value (e.g. -5 with "
                    "--pid on a shared machine: it then keeps both CPUs busy, 20,000 samples a second)")
    ap.add_argument("--own-session", action="store_true", help="each daemon in a session, hence an "
                    "autogroup, of its own (as a service has a cgroup of its own; see own_session())")
    ap.add_argument("--timeline", action="store_true", help="scrape the daemon's /metrics every 0.25 s "
                    "for its ring buffer drops over time (the JSON's timeline; the first 5 s in the table)")
    ap.add_argument("--json")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("scale: run as root")
    bins = {}
    for spec in args.otelprofd:
        name, sep, path = spec.partition("=")
        if not sep or not os.access(path, os.X_OK):
            sys.exit(f"scale: --otelprofd wants NAME=PATH of an executable, not {spec!r}")
        bins[name] = os.path.abspath(path)
    extras = {}
    for spec in args.extra:
        name, _, more = spec.partition("=")
        extras[name] = shlex.split(more)
    tmp = tempfile.mkdtemp(prefix="otelprofd-scale-")
    collector = bench.Collector(args.build, tmp) if args.export else None
    runs = []
    names = list(bins)
    try:
        for r in range(args.rounds):
            for k in names[r % len(names):] + names[:r % len(names)]:
                log(f"round {r + 1}/{args.rounds}: {k} ...")
                res = one_run(k, bins[k], extras.get(k, []), args, tmp, collector.port if collector else None)
                res["round"] = r + 1
                runs.append(res)
                log(f"  {res['kept']:,} kept, {res['dropped']:,} dropped, {res['cpu_s']:.2f} s CPU "
                    f"({res['cpu_pct']:.1f}%), {res['hwm_mib']:.1f} MiB, load {res['load1']:.1f}")
    finally:
        if collector:
            collector.stop()
    print(table(runs, names))
    print()
    print("Commands: " + "; ".join(sorted({r["command"] for r in runs})) +
          (f" (each run under nice {args.nice})" if args.nice else "") +
          (" (each daemon in a session of its own)" if args.own_session else "") +
          (f" (the workload under nice {args.workload_nice})" if args.workload_nice else ""))
    if args.json:
        json.dump(runs, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
