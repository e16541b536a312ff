#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Where otelprofd's memory goes (issue 30 item 2): peak RSS and a breakdown by mapping in three cases.

  idle      the daemon's floor: --pid of a sleeping process (nothing sampled; a shared machine is never
            idle), at the service's rate (19 Hz)
  host      the whole host at the service's rate (19 Hz), whatever it runs
  busy      2 threads busy on 2 CPUs at -F 10000 (20,000 samples a second), SECONDS long
  live1000  1,000 live processes (bench/workloads/burst: 1 ms of CPU a second each) at 99 Hz

Each case runs otelprofd exporting OTLP to the test collector (tests/otlp) every --export-interval
(the service's path; --mode file writes one profile at the end instead, an ad hoc run's path).
While it runs, /proc/PID/status (VmRSS, VmHWM) is read every 0.25 s and /proc/PID/smaps every
second; the smaps of the highest RSS seen is broken down by mapping kind (heap and anonymous
memory, BPF ring buffer and maps, the otelprofd binary, the libraries it links (ldd) or loads at first use, other files:
binaries and debug files the symbolizer mapped). The end-of-run /metrics scrape gives the symbol cache's bytes.

Usage (as root, from the repository root, after scripts/build.sh build):
  bench/memory/run.py --build build [--otelprofd BINARY] [--cases idle,busy,live1000] [--seconds 60] [--label NAME]
      [--json OUT.json] [-- EXTRA OTELPROFD ARGS]
Prints one markdown row per case.
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from run import Collector  # noqa: E402  (bench/run.py: the test collector on loopback)
KINDS = ("heap+anon", "bpf ringbuf", "bpf maps", "binary", "own libs", "other files", "stack")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                out[k] = int(v.split()[0])
    return out


# What the daemon loads at first use (symbolizer/dl_lib.h): its own libraries too when mapped.
LOADED_AT_FIRST_USE = ("libgrpc.so.29", "libcurl.so.4", "libdebuginfod.so.1")


def linked_libraries(binary):
    """The shared libraries the daemon is linked with (ldd), and those it loads at first use with
    theirs: its own, unlike the files the symbolizer maps."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    own = {os.path.realpath(p) for p in re.findall(r"(/\S+) \(0x", out)}
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    for soname in LOADED_AT_FIRST_USE:
        m = re.search(rf"^\s*{re.escape(soname)} \(libc6,x86-64\) => (\S+)", cache, re.M)
        if m:
            own.add(os.path.realpath(m.group(1)))
            out = subprocess.run(["ldd", m.group(1)], capture_output=True, text=True).stdout
            own |= {os.path.realpath(p) for p in re.findall(r"(/\S+) \(0x", out)}
    return own


def smaps_kinds(pid, binary, own):
    """KiB resident by mapping kind, and the largest 'other files' mappings (binaries and debug files the
    symbolizer mapped)."""
    kinds = dict.fromkeys(KINDS, 0)
    files = {}
    name = ""
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            first = line.split(None, 1)[0]
            if "-" in first and not first.endswith(":"):
                parts = line.split(None, 5)
                name = parts[5].strip() if len(parts) > 5 else ""
            elif first == "Rss:":
                kib = int(line.split()[1])
                if name == "[heap]" or name == "" or name.startswith("[anon"):
                    kind = "heap+anon"
                elif "bpf-ringbuf" in name or "bpf_ringbuf" in name:
                    kind = "bpf ringbuf"
                elif "bpf" in name and name.startswith("anon_inode"):
                    kind = "bpf maps"
                elif name.startswith("[stack"):
                    kind = "stack"
                elif os.path.realpath(name) == binary:
                    kind = "binary"
                elif os.path.realpath(name) in own:
                    kind = "own libs"
                elif name.startswith("["):
                    kind = "stack"  # [vvar], [vdso], [vsyscall]
                else:
                    kind = "other files"
                    files[name] = files.get(name, 0) + kib
                kinds[kind] += kib
    return kinds, sorted(files.items(), key=lambda kv: -kv[1])[:5]


def scrape(port):
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        key, _, value = line.rpartition(" ")
        try:
            out[key] = float(value)
        except ValueError:
            pass
    return out


def metric_sum(metrics, prefix):
    return sum(v for k, v in metrics.items() if k == prefix or k.startswith(prefix + "{"))


def workload(build, case):
    """The processes of a case (started before the daemon), and how long they need to settle."""
    if case == "busy":
        return [subprocess.Popen([os.path.join(build, "bench", "cpu_bench"), "2", "1000000"])], 0.5
    if case == "idle":
        return [subprocess.Popen(["sleep", "100000"])], 0
    if case == "live1000":
        burst = os.path.join(build, "bench", "burst")
        return [subprocess.Popen([burst, "1", "1000", "0"]) for _ in range(1000)], 3
    return [], 0


def run_case(args, case, tmp, collector):
    freq = {"idle": 19, "host": 19, "busy": 10000, "live1000": 99}[case]
    procs, settle = workload(args.build, case)
    port = free_port()
    binary = os.path.realpath(args.otelprofd or os.path.join(args.build, "daemon", "otelprofd"))
    own = linked_libraries(binary)
    cmd = [binary, "-F", str(freq), "--duration", "0", "--metrics-address", f"127.0.0.1:{port}"]
    if args.mode == "export":
        cmd += ["--endpoint", f"127.0.0.1:{collector.port}", "--insecure", "--export-interval", args.export_interval]
    else:
        cmd += ["-o", os.path.join(tmp, f"{case}.pb.gz")]
    if case == "idle":
        cmd += ["--pid", str(procs[0].pid)]
    cmd += args.extra
    time.sleep(settle)
    log(f"{case}: $ {' '.join(cmd)}")
    errlog = open(os.path.join(tmp, f"{case}.log"), "w")
    daemon = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errlog, start_new_session=True)
    peak = {"VmRSS": 0}
    peak_kinds, peak_files, peak_smaps_rss = None, None, 0
    rss_series = []
    metrics = {}
    started = time.monotonic()
    end = started + args.seconds
    next_smaps = 0
    try:
        while time.monotonic() < end:
            if daemon.poll() is not None:
                raise RuntimeError(f"otelprofd exited {daemon.returncode}: see {errlog.name}")
            st = status_kib(daemon.pid)
            rss_series.append((round(time.monotonic() - started, 2), st["VmRSS"]))
            if st["VmRSS"] > peak["VmRSS"]:
                peak = st
            if time.monotonic() >= next_smaps:
                next_smaps = time.monotonic() + 1
                kinds, files = smaps_kinds(daemon.pid, binary, own)
                total = sum(kinds.values())
                if total > peak_smaps_rss:
                    peak_smaps_rss, peak_kinds, peak_files = total, kinds, files
            time.sleep(0.25)
        metrics = scrape(port)
        final = status_kib(daemon.pid)
        daemon.send_signal(signal.SIGTERM)
        _, status, usage = os.wait4(daemon.pid, 0)
        daemon.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if daemon.poll() is None and daemon.returncode is None:
            daemon.kill()
            daemon.wait()
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
    text = open(errlog.name).read()
    kept = re.search(r"(\d+) samples kept, (\d+) dropped", text)
    row = dict(case=case, freq=freq, seconds=args.seconds, hwm_mib=final["VmHWM"] / 1024,
               maxrss_mib=usage.ru_maxrss / 1024, end_rss_mib=final["VmRSS"] / 1024,
               tail_rss_mib=max(r for _, r in rss_series[len(rss_series) // 2:]) / 1024 if rss_series else 0,
               peak_anon_mib=peak.get("RssAnon", 0) / 1024, peak_file_mib=peak.get("RssFile", 0) / 1024,
               peak_shmem_mib=peak.get("RssShmem", 0) / 1024,
               kinds_mib={k: v / 1024 for k, v in (peak_kinds or {}).items()},
               top_files=[(n, kib / 1024) for n, kib in (peak_files or [])],
               symbol_cache_mib=metric_sum(metrics, "otelprofd_symbolizer_module_bytes") / 2**20,
               samples=int(kept.group(1)) if kept else None, dropped=int(kept.group(2)) if kept else None,
               exit=daemon.returncode, cpu_s=usage.ru_utime + usage.ru_stime)
    log(json.dumps(row))
    # VmRSS every 0.25 s (seconds since start, MiB): in --json only, to see when the peak came.
    row["rss_series"] = [(s, round(r / 1024, 1)) for s, r in rss_series]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--otelprofd", help="the daemon to measure (default: BUILD/daemon/otelprofd; the workloads and "
                    "the test collector come from BUILD)")
    ap.add_argument("--cases", default="idle,busy,live1000")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--mode", choices=("export", "file"), default="export")
    ap.add_argument("--export-interval", default="10s")
    ap.add_argument("--label", default="this tree")
    ap.add_argument("--json")
    ap.add_argument("extra", nargs="*", help="more otelprofd arguments (after --)")
    args = ap.parse_args()
    if os.geteuid():
        sys.exit("bench/memory/run.py: run as root (BPF)")
    tmp = tempfile.mkdtemp(prefix="otelprofd-mem-")
    collector = Collector(args.build, tmp) if args.mode == "export" else None
    rows = []
    try:
        for case in args.cases.split(","):
            rows.append(run_case(args, case, tmp, collector))
    finally:
        if collector:
            collector.stop()
    print(f"| build | case | VmHWM MiB | RSS, 2nd half max | anon / file MiB at peak | "
          f"{' / '.join(KINDS)} (smaps at peak, MiB) | symbol cache MiB | samples kept / dropped |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        k = r["kinds_mib"]
        print(f"| {args.label} | {r['case']} ({r['freq']} Hz, {r['seconds']:.0f} s) | {r['hwm_mib']:.1f} | "
              f"{r['tail_rss_mib']:.1f} | {r['peak_anon_mib']:.1f} / {r['peak_file_mib']:.1f} | "
              f"{' / '.join(f'{k.get(n, 0):.1f}' for n in KINDS)} | {r['symbol_cache_mib']:.1f} | "
              f"{r['samples']} / {r['dropped']} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(label=args.label, rows=rows, argv=sys.argv), f, indent=1)


if __name__ == "__main__":
    main()
