#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Off-CPU overhead: `perf bench sched pipe` and `perf bench sched messaging` alone, under otelprofd
(without --off-cpu, with it at the default probability and at 1), and under bcc's offcputime (libbpf-tools).

Each round runs every configuration once, in a rotating order; figures are medians over rounds.
Slowdown: the workload's wall time against its time alone in the same round. Profiler CPU: the
profiler's own user + system time while the workload ran, plus the run time of its sched_switch
BPF program (kernel.bpf_stats_enabled), in CPU-seconds per workload second.
Usage: bench/off_cpu/run.py OTELPROFD [--rounds N]. Run as root on an otherwise quiet machine."""
import argparse
import json
import os
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
    """Run time of every sched_switch-ish program: otelprofd's and offcputime's (kprobe oncpu)."""
    out = subprocess.run(["bpftool", "prog", "show", "--json"], stdout=subprocess.PIPE, text=True).stdout
    return sum(p.get("run_time_ns", 0) for p in json.loads(out)
               if p.get("name") in SWITCH_PROGRAMS)


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
    bpf = (bpf_run_ns() - bpf0) / 1e9
    if prof:
        prof.send_signal(signal.SIGINT)
        try:
            prof.wait(timeout=60)
        except subprocess.TimeoutExpired:
            prof.kill()
            prof.wait()
    return wall, cpu, bpf, switch_progs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("otelprofd")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=True)
    configs = {"alone": None, **profilers(args.otelprofd)}
    results = {}
    for wname, workload in WORKLOADS.items():
        rows = {c: [] for c in configs}
        for r in range(args.rounds):
            names = list(configs)
            names = names[r % len(names):] + names[:r % len(names)]
            for c in names:
                rows[c].append(run_once(workload, configs[c]))
        alone = statistics.median(w for w, _, _, _ in rows["alone"])
        results[wname] = {"alone": alone, "rows": {}}
        for c in configs:
            walls = [w for w, _, _, _ in rows[c]]
            results[wname]["rows"][c] = {
                "wall": statistics.median(walls),
                "slowdown": statistics.median(w / a - 1 for (w, _, _, _), (a, _, _, _) in zip(rows[c], rows["alone"])),
                "cpu": statistics.median(cpu / w for w, cpu, _, _ in rows[c]),
                "bpf": statistics.median(b / w for w, _, b, _ in rows[c]),
                "switch_programs": sorted(set(p for _, _, _, ps in rows[c] for p in ps)),
            }
    print(json.dumps(results, indent=1))
    for wname, res in results.items():
        print(f"\n### `{' '.join(WORKLOADS[wname])}`\n")
        print(f"Alone: {res['alone']:.3f} s (median of {args.rounds}).\n")
        print("| profiler | time | slowdown | profiler CPU (user space) | BPF sched_switch run time | "
              "switch programs attached |")
        print("|---|---|---|---|---|---|")
        for c, row in res["rows"].items():
            print(f"| {c} | {row['wall']:.3f} s | {100 * row['slowdown']:+.1f}% | {100 * row['cpu']:.1f}% | "
                  f"{100 * row['bpf']:.1f}% | {', '.join(row['switch_programs']) or 'none'} |")


if __name__ == "__main__":
    main()
