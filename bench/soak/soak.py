#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A soak at the service's settings (issue 27, item 7): does otelprofd's memory and CPU plateau?

otelprofd runs as the unit runs it (--config systemd/otelprofd.conf: 19 Hz, --max-cpu 10, duration 0,
whole host, Nice=5), exporting OTLP/gRPC to the real OpenTelemetry Collector of the test suite
(scripts/build-collector.sh; a profiles pipeline into its debug exporter) on 127.0.0.1, with
  - process churn: a driver starting ~--spawn-rate short-lived processes a second, a mix of `sh -c`
    one-liners and `python3 -c` with a little CPU, and two long-lived Python processes busy a quarter
    of the time each;
  - the Collector stopped every 10 minutes (SIGKILL) and started again --collector-down seconds later
    (default 8 s). An outage shorter than the export timeout (10 s) is absorbed by the gRPC send,
    which waits for the connection within its deadline: no retry. --collector-down 25 exercises the
    export retries and the queue.
Every --interval seconds it records the daemon's VmRSS and VmHWM (/proc/PID/status), its cumulative
user+system CPU (/proc/PID/stat), its self-metrics (/metrics on 127.0.0.1: samples, drops, export
requests by outcome, attempts, retries, queue) and the machine's load (/proc/loadavg) to OUT/soak.csv;
at the end it prints a table per 10-minute window and whether RSS and CPU plateau (the second half's
RSS growth and CPU against the first half's), and writes both to OUT/soak.json.
Everything it starts is killed at the end, on Ctrl-C, SIGTERM or when the daemon dies.

Usage (as root, BPF):
  bench/soak/soak.py --otelprofd /var/tmp/soak/otelprofd [--minutes 60] [--out /var/tmp/soak]
                     [--collector PATH] [--spawn-rate 20] [--interval 30] [--window 10]
A short run (--minutes 2 --window 1) checks the script first. Exit status: 0 when the run completed
and the daemon stayed up, 1 otherwise.
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLK_TCK = os.sysconf("SC_CLK_TCK")
FEATURE_GATE = "--feature-gates=+service.profilesSupport"
METRICS = {  # column: (metric name, label filter or None: the sum over all label sets)
    "samples": ("otelprofd_samples_total", None),
    "samples_dropped": ("otelprofd_samples_dropped_total", None),
    "samples_dropped_cpu": ("otelprofd_samples_dropped_total", 'reason="cpu_ceiling"'),
    "put_off": ("otelprofd_samples_put_off_total", None),
    "req_sent": ("otelprofd_export_requests_total", 'status="sent"'),
    "req_all": ("otelprofd_export_requests_total", None),
    "attempts": ("otelprofd_export_attempts_total", None),
    "retries": ("otelprofd_export_retries_total", None),
    "export_samples_dropped": ("otelprofd_export_samples_dropped_total", None),
    "queue_requests": ("otelprofd_export_queue_requests", None),
    "queue_bytes": ("otelprofd_export_queue_bytes", None),
    "shed_level": ("otelprofd_cpu_shed_level", None),
    "modules": ("otelprofd_symbolizer_modules", None),
    "module_bytes": ("otelprofd_symbolizer_module_bytes", None),
    "processes_evicted": ("otelprofd_symbolizer_processes_evicted_total", None),
}
COLUMNS = ["t", "utc", "rss_kib", "hwm_kib", "cpu_s", "load1", "load5", "collector_up"] + list(METRICS)

# The churn driver: runs as its own process (python3 -c) so that its spawning is one more workload.
CHURN = r"""
import os, random, subprocess, sys, time
rate = float(sys.argv[1])
cmds = [
    ["sh", "-c", "true"],
    ["sh", "-c", "echo soak | wc -c >/dev/null"],
    ["sh", "-c", "i=0; while [ $i -lt 300 ]; do i=$((i+1)); done"],
    ["sh", "-c", "ls /proc/self/ >/dev/null; date >/dev/null"],
    [sys.executable, "-c", "sum(i * i for i in range(30000))"],
    [sys.executable, "-c", "import json; json.dumps([list(range(50))] * 200)"],
]
children = []
period = 1.0 / rate
nxt = time.monotonic()
while True:
    children.append(subprocess.Popen(random.choice(cmds), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    children = [c for c in children if c.poll() is None]
    nxt += period
    time.sleep(max(0.0, nxt - time.monotonic()))
"""
BUSY = r"""
import time
def leaf(n):
    return sum(i * i for i in range(n))
def busy():
    end = time.monotonic() + 0.05
    while time.monotonic() < end:
        leaf(2000)
while True:
    busy()
    time.sleep(0.15)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.2)
    return False


class Soak:
    def __init__(self, args):
        self.args = args
        self.procs = {}  # name: Popen, everything to kill at the end
        self.collector = None
        self.events = []

    def log(self, msg):
        line = f"{time.strftime('%H:%M:%S', time.gmtime())} soak: {msg}"
        print(line, flush=True)
        self.events.append(line)

    def start(self, name, cmd, log_name=None, **kw):
        out = open(os.path.join(self.args.out, log_name), "a") if log_name else subprocess.DEVNULL
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
                             if log_name else subprocess.DEVNULL, start_new_session=True, **kw)
        self.procs[name] = p
        return p

    def kill(self, name, sig=signal.SIGKILL, timeout=10):
        p = self.procs.pop(name, None)
        if p is None or p.poll() is not None:
            return None if p is None else p.returncode
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            return p.wait()

    def collector_start(self):
        self.start("collector", [self.args.collector, f"--config={self.collector_config}", FEATURE_GATE],
                   "collector.log")
        if not wait_port(self.grpc_port, 60):
            self.log("the Collector did not listen within 60 s")
        else:
            self.log(f"Collector up on 127.0.0.1:{self.grpc_port}")

    def collector_up(self):
        p = self.procs.get("collector")
        return int(p is not None and p.poll() is None)

    def scrape(self):
        values = {k: "" for k in METRICS}
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).read().decode()
        except OSError as e:
            self.log(f"/metrics: {e}")
            return values
        for col, (name, label) in METRICS.items():
            total, seen = 0.0, False
            for m in re.finditer(rf"^{name}(\{{[^}}]*\}})? (\S+)$", text, re.M):
                if label is None or (m.group(1) and label in m.group(1)):
                    total += float(m.group(2))
                    seen = True
            values[col] = total if seen else 0.0
        return values

    def record(self, t0):
        pid = self.procs["otelprofd"].pid
        row = {"t": round(time.monotonic() - t0, 1), "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        row["rss_kib"] = int(status["VmRSS"].split()[0])
        row["hwm_kib"] = int(status["VmHWM"].split()[0])
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        row["cpu_s"] = round((int(fields[11]) + int(fields[12])) / CLK_TCK, 2)  # utime, stime
        load = open("/proc/loadavg").read().split()
        row["load1"], row["load5"] = float(load[0]), float(load[1])
        row["collector_up"] = self.collector_up()
        row.update(self.scrape())
        return row

    def run(self):
        a = self.args
        os.makedirs(a.out, exist_ok=True)
        for name in ("otelprofd.log", "collector.log", "soak.csv"):
            open(os.path.join(a.out, name), "w").close()
        self.grpc_port, self.metrics_port = free_port(), free_port()
        self.collector_config = os.path.join(a.out, "collector.yaml")
        with open(self.collector_config, "w") as f:
            json.dump({
                "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": f"127.0.0.1:{self.grpc_port}"}}}},
                "exporters": {"debug": {"verbosity": "basic"}},
                "service": {"telemetry": {"metrics": {"level": "none"}, "logs": {"level": "warn"}},
                            "pipelines": {"profiles": {"receivers": ["otlp"], "exporters": ["debug"]}}},
            }, f, indent=1)
        self.collector_start()
        self.start("busy1", [sys.executable, "-c", BUSY])
        self.start("busy2", [sys.executable, "-c", BUSY])
        # As the unit runs it: its configuration file, Nice=5; the endpoint and the metrics address
        # are the lines an operator uncomments.
        self.daemon_cmd = [a.otelprofd, "--config", os.path.join(REPO, "systemd", "otelprofd.conf"),
                           "--endpoint", f"http://127.0.0.1:{self.grpc_port}",
                           "--metrics-address", f"127.0.0.1:{self.metrics_port}"]
        self.log("$ " + " ".join(self.daemon_cmd))
        self.start("otelprofd", self.daemon_cmd, "otelprofd.log", preexec_fn=lambda: os.nice(5))
        if not wait_port(self.metrics_port, 120):
            self.log("otelprofd's /metrics did not answer within 120 s")
            return False
        self.start("churn", [sys.executable, "-c", CHURN, str(a.spawn_rate)])
        t0 = time.monotonic()
        end = t0 + a.minutes * 60
        next_sample = t0
        next_restart = t0 + a.restart_minutes * 60
        restart_at = None
        ok = True
        with open(os.path.join(a.out, "soak.csv"), "w") as csv:
            csv.write(",".join(COLUMNS) + "\n")
            while True:
                now = time.monotonic()
                if self.procs["otelprofd"].poll() is not None:
                    self.log(f"otelprofd exited {self.procs['otelprofd'].returncode} during the run")
                    ok = False
                    break
                if now >= next_sample:
                    row = self.record(t0)
                    self.rows.append(row)
                    csv.write(",".join(str(row[c]) for c in COLUMNS) + "\n")
                    csv.flush()
                    self.log(f"t={row['t']:.0f}s rss={row['rss_kib']} KiB hwm={row['hwm_kib']} KiB "
                             f"cpu={row['cpu_s']} s samples={row['samples']:.0f} "
                             f"queue={row['queue_requests']:.0f} load={row['load1']}")
                    if now >= end:
                        break
                    next_sample += a.interval
                if now >= next_restart and now < end - 30:
                    self.kill("collector")
                    self.log(f"Collector killed; down {a.collector_down} s")
                    restart_at = now + a.collector_down
                    next_restart += a.restart_minutes * 60
                if restart_at is not None and now >= restart_at:
                    self.collector_start()
                    restart_at = None
                time.sleep(min(1.0, max(0.05, min(next_sample, restart_at or next_sample) - time.monotonic())))
        return ok

    def stop_all(self):
        code = self.kill("otelprofd", signal.SIGTERM, timeout=30)
        if code is not None:
            self.log(f"otelprofd exited {code} on SIGTERM")
        self.daemon_exit = code
        for name in list(self.procs):
            self.kill(name)


def windows(rows, window_s):
    """Per window [k*w, (k+1)*w): RSS min/max, CPU % of one core, deltas of counters. The sample at
    the window's start (the previous window's last) is the baseline of the deltas."""
    out = []
    k = 0
    while True:
        lo, hi = k * window_s, (k + 1) * window_s
        inside = [r for r in rows if lo < r["t"] <= hi + 1]
        before = [r for r in rows if r["t"] <= lo + 1]
        if not inside or not before:
            break
        b, e = before[-1], inside[-1]
        dt = e["t"] - b["t"]

        def d(col):
            return (e[col] or 0) - (b[col] or 0)
        out.append({
            "window": f"{lo // 60:.0f}-{hi // 60:.0f} min",
            "rss_min_mib": min(r["rss_kib"] for r in inside) / 1024,
            "rss_max_mib": max(r["rss_kib"] for r in inside) / 1024,
            "hwm_mib": e["hwm_kib"] / 1024,
            "cpu_pct": 100 * d("cpu_s") / dt if dt else 0,
            "samples": d("samples"), "dropped": d("samples_dropped"), "dropped_cpu": d("samples_dropped_cpu"),
            "req_sent": d("req_sent"), "req_dropped": d("req_all") - d("req_sent"),
            "attempts_failed": d("attempts") - d("req_sent"), "retries": d("retries"),
            "queue_max": max((r["queue_requests"] or 0) for r in inside),
            "load1_mean": sum(r["load1"] for r in inside) / len(inside),
        })
        k += 1
    return out


def at(rows, t):
    """The sample nearest to t seconds."""
    return min(rows, key=lambda r: abs(r["t"] - t))


def verdict(rows, minutes):
    """Plateau: the second half's RSS growth and CPU against the first half's. The first sample
    (t=0) is taken once /metrics answers, after the BPF programs are loaded."""
    total = rows[-1]["t"]
    start, mid, last = rows[0], at(rows, total / 2), rows[-1]
    g1 = (mid["rss_kib"] - start["rss_kib"]) / 1024
    g2 = (last["rss_kib"] - mid["rss_kib"]) / 1024
    c1 = 100 * (mid["cpu_s"] - start["cpu_s"]) / max(1, mid["t"] - start["t"])
    c2 = 100 * (last["cpu_s"] - mid["cpu_s"]) / max(1, last["t"] - mid["t"])
    # RSS: the second half grows by under 1 MiB or under a quarter of the first half's growth and
    # under 5% of the RSS at the middle; CPU: the second half within 1.5x (+0.3 points) of the first.
    rss_ok = g2 < 1 or (g2 < 0.25 * max(g1, 0) and g2 < 0.05 * mid["rss_kib"] / 1024)
    cpu_ok = c2 <= 1.5 * c1 + 0.3
    return {
        "rss_start_mib": start["rss_kib"] / 1024, "rss_mid_mib": mid["rss_kib"] / 1024,
        "rss_end_mib": last["rss_kib"] / 1024, "hwm_end_mib": last["hwm_kib"] / 1024,
        "rss_growth_first_half_mib": g1, "rss_growth_second_half_mib": g2,
        "cpu_pct_first_half": c1, "cpu_pct_second_half": c2,
        "rss_plateau": rss_ok, "cpu_plateau": cpu_ok,
    }


def table(ws):
    head = ("| window | RSS min–max MiB | VmHWM MiB | CPU % of a core | samples | dropped (cpu ceiling) | "
            "requests sent | requests dropped | failed sends | retries | queue max | load1 |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for w in ws:
        lines.append(f"| {w['window']} | {w['rss_min_mib']:.1f}–{w['rss_max_mib']:.1f} | {w['hwm_mib']:.1f} | "
                     f"{w['cpu_pct']:.2f} | {w['samples']:.0f} | {w['dropped']:.0f} ({w['dropped_cpu']:.0f}) | "
                     f"{w['req_sent']:.0f} | {w['req_dropped']:.0f} | {w['attempts_failed']:.0f} | "
                     f"{w['retries']:.0f} | {w['queue_max']:.0f} | {w['load1_mean']:.2f} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--otelprofd", required=True, help="the daemon (a copy that nothing rebuilds mid-run)")
    p.add_argument("--minutes", type=float, default=60)
    p.add_argument("--out", default="/var/tmp/soak")
    p.add_argument("--collector", help="the Collector binary (default: scripts/build-collector.sh's)")
    p.add_argument("--spawn-rate", type=float, default=20, help="short-lived processes a second")
    p.add_argument("--interval", type=float, default=30, help="seconds between samples")
    p.add_argument("--window", type=float, default=10, help="minutes per summary window")
    p.add_argument("--restart-minutes", type=float, default=10, help="minutes between Collector restarts")
    p.add_argument("--collector-down", type=float, default=8, help="seconds the Collector stays down")
    a = p.parse_args()
    if a.collector is None:
        a.collector = subprocess.run([os.path.join(REPO, "scripts", "build-collector.sh")], check=True,
                                     stdout=subprocess.PIPE, text=True).stdout.strip()
    soak = Soak(a)
    soak.rows = []
    soak.daemon_exit = None

    def on_signal(sig, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    ok = False
    try:
        ok = soak.run()
    except KeyboardInterrupt:
        soak.log("interrupted")
    finally:
        soak.stop_all()
    ended = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    log = open(os.path.join(a.out, "otelprofd.log"), errors="replace").read()
    notable = [ln for ln in log.splitlines() if re.search(r"error|warn|fail|abort|sanitizer|assert", ln, re.I)]
    result = {"command": " ".join(sys.argv), "daemon_command": " ".join(getattr(soak, "daemon_cmd", [])),
              "started": started, "ended": ended, "completed": ok, "daemon_exit_on_sigterm": soak.daemon_exit,
              "samples": soak.rows, "events": soak.events, "daemon_log_notable_lines": len(notable),
              "daemon_log_notable_first": notable[:20]}
    if len(soak.rows) >= 3:
        result["windows"] = windows(soak.rows, a.window * 60)
        result["verdict"] = verdict(soak.rows, a.minutes)
        print()
        print(table(result["windows"]))
        v = result["verdict"]
        print(f"\nRSS {v['rss_start_mib']:.1f} MiB at the start, {v['rss_mid_mib']:.1f} at the middle, "
              f"{v['rss_end_mib']:.1f} at the end (VmHWM {v['hwm_end_mib']:.1f}): +{v['rss_growth_first_half_mib']:.2f} "
              f"MiB in the first half, {v['rss_growth_second_half_mib']:+.2f} MiB in the second: "
              f"{'plateau' if v['rss_plateau'] else 'NOT a plateau'}")
        print(f"CPU {v['cpu_pct_first_half']:.2f}% of a core in the first half, {v['cpu_pct_second_half']:.2f}% "
              f"in the second: {'plateau' if v['cpu_plateau'] else 'NOT a plateau'}")
    print(f"daemon log: {len(notable)} lines with error/warn/fail; exit on SIGTERM: {soak.daemon_exit}")
    for ln in notable[:10]:
        print("  " + ln)
    with open(os.path.join(a.out, "soak.json"), "w") as f:
        json.dump(result, f, indent=1)
    return 0 if ok and soak.daemon_exit == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
