#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Off-CPU overhead: `perf bench sched pipe` and `perf bench sched messaging` alone, under otelprofd
(without --off-cpu, with it at the default probability and at 1), and under bcc's offcputime (libbpf-tools).

Each round runs every configuration once, in a rotating order; figures are medians over rounds.
Slowdown: the workload's wall time against its time alone in the same round. Profiler CPU: the
profiler's own user + system time while the workload ran, plus the run time of its sched_switch
BPF program (kernel.bpf_stats_enabled), in CPU-seconds per workload second.
Usage: bench/off_cpu/run.py OTELPROFD [--rounds N] [--workload pipe|messaging] [--before OTELPROFD].
Run as root on an otherwise quiet machine."""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import time

WORKLOADS = {
    "sched pipe": ["perf", "bench", "sched", "pipe", "-l", "300000"],
    "sched messaging": ["perf", "bench", "sched", "messaging", "-g", "10", "-l", "200"],
}


# otelprofd's program, libbpf-tools offcputime's (tp_btf) and bpfcc-tools offcputime's (kprobe).
SWITCH_PROGRAMS = ("on_sched_switch", "sched_switch", "oncpu")


def profilers(otelprofd):
    base = [otelprofd, "--duration", "0", "-q", "-o", "/tmp/offcpu-bench.folded"]
    return {
        "otelprofd (on-CPU only)": base,
        "otelprofd --off-cpu": base + ["--off-cpu"],
        "otelprofd --off-cpu --off-cpu-probability 1": base + ["--off-cpu", "--off-cpu-probability", "1"],
        "otelprofd --off-cpu --off-cpu-probability 1 --stack-copy 0":
            base + ["--off-cpu", "--off-cpu-probability", "1", "--stack-copy", "0"],
        # bcc's tool as libbpf-tools ships it (CO-RE): bpfcc-tools' Python offcputime needs the
        # kernel's headers, which kernels without a headers package (or CONFIG_IKHEADERS) lack.
        "offcputime (bcc libbpf-tools)": ["/usr/sbin/offcputime"],
    }


def cpu_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bpf_run_ns():
    """(run time, runs) of every sched_switch-ish program: otelprofd's and offcputime's (kprobe oncpu)."""
    out = subprocess.run(["bpftool", "prog", "show", "--json"], stdout=subprocess.PIPE, text=True).stdout
    progs = [p for p in json.loads(out) if p.get("name") in SWITCH_PROGRAMS]
    return sum(p.get("run_time_ns", 0) for p in progs), sum(p.get("run_cnt", 0) for p in progs)


def attached_switch_programs():
    out = subprocess.run(["bpftool", "prog", "show", "--json"], stdout=subprocess.PIPE, text=True).stdout
    return [p["name"] for p in json.loads(out) if p.get("name") in SWITCH_PROGRAMS]


def run_once(workload, profiler):
    prof = None
    if profiler:
        prof = subprocess.Popen(profiler, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(4)  # loaded and attached
        # offcputime compiles its program with clang first: wait until its kprobe program is loaded.
        deadline = time.time() + 120
        while "offcputime" in profiler[0] and not attached_switch_programs() and time.time() < deadline:
            time.sleep(1)
    switch_progs = attached_switch_programs()
    cpu0 = cpu_of(prof.pid) if prof else 0
    bpf0 = bpf_run_ns()
    t0 = time.monotonic()
    subprocess.run(workload, stdout=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - t0
    cpu = (cpu_of(prof.pid) - cpu0) if prof else 0
    bpf1 = bpf_run_ns()
    bpf = (bpf1[0] - bpf0[0]) / 1e9
    runs = bpf1[1] - bpf0[1]
    if prof:
        prof.send_signal(signal.SIGINT)
        try:
            prof.wait(timeout=60)
        except subprocess.TimeoutExpired:
            prof.kill()
            prof.wait()
    # Per switch: the BPF program's time and the profiler's own CPU, which the machine's load moves
    # much less than the workload's wall time.
    per_switch = (bpf * 1e9 / runs, cpu * 1e9 / runs) if runs else (0.0, 0.0)
    return wall, cpu, bpf, switch_progs, per_switch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("otelprofd")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workload", choices=["pipe", "messaging"], action="append",
                    help="run only this workload (repeatable; default: both)")
    ap.add_argument("--before", metavar="OTELPROFD",
                    help="another build, run at probability 1 too (a before/after comparison)")
    args = ap.parse_args()
    # Say what is missing before the first round, not after minutes of them.
    missing = [tool for tool in ("perf", "bpftool", "/usr/sbin/offcputime") if not shutil.which(tool)]
    if missing:
        raise SystemExit(f"run.py: missing {', '.join(missing)} (apt-get install linux-perf bpftool libbpf-tools)")
    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=True)
    configs = {"alone": None, **profilers(args.otelprofd)}
    if args.before:
        configs["before: otelprofd --off-cpu --off-cpu-probability 1"] = (
            [args.before] + profilers(args.otelprofd)["otelprofd --off-cpu --off-cpu-probability 1"][1:])
    workloads = {w: WORKLOADS[w] for w in WORKLOADS if not args.workload or w.split()[1] in args.workload}
    results = {}
    for wname, workload in workloads.items():
        rows = {c: [] for c in configs}
        for r in range(args.rounds):
            names = list(configs)
            names = names[r % len(names):] + names[:r % len(names)]
            for c in names:
                rows[c].append(run_once(workload, configs[c]))
        alone = statistics.median(r[0] for r in rows["alone"])
        results[wname] = {"alone": alone, "rows": {}}
        for c in configs:
            results[wname]["rows"][c] = {
                "wall": statistics.median(r[0] for r in rows[c]),
                "slowdown": statistics.median(r[0] / a[0] - 1 for r, a in zip(rows[c], rows["alone"])),
                "cpu": statistics.median(r[1] / r[0] for r in rows[c]),
                "bpf": statistics.median(r[2] / r[0] for r in rows[c]),
                "bpf_ns_per_switch": statistics.median(r[4][0] for r in rows[c]),
                "cpu_ns_per_switch": statistics.median(r[4][1] for r in rows[c]),
                "switch_programs": sorted(set(p for r in rows[c] for p in r[3])),
            }
    print(json.dumps(results, indent=1))
    for wname, res in results.items():
        print(f"\n### `{' '.join(WORKLOADS[wname])}`\n")
        print(f"Alone: {res['alone']:.3f} s (median of {args.rounds}).\n")
        print("| profiler | time | slowdown | profiler CPU (user space) | BPF sched_switch run time | "
              "BPF ns per switch | profiler CPU ns per switch | switch programs attached |")
        print("|---|---|---|---|---|---|---|---|")
        for c, row in res["rows"].items():
            print(f"| {c} | {row['wall']:.3f} s | {100 * row['slowdown']:+.1f}% | {100 * row['cpu']:.1f}% | "
                  f"{100 * row['bpf']:.1f}% | {row['bpf_ns_per_switch']:.0f} | {row['cpu_ns_per_switch']:.0f} | "
                  f"{', '.join(row['switch_programs']) or 'none'} |")


if __name__ == "__main__":
    main()
