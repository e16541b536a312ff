#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Allocation profiling overhead (issue 28): bench/workloads/tree.c (binary trees of 48-byte nodes
built, walked and freed: millions of small allocations) alone, with libotelprofd-alloc.so preloaded
(no daemon), with the library and `otelprofd --alloc` (whole host, default 512 KiB mean), under
heaptrack, and under bcc's memleak: bpfcc-tools' memleak-bpfcc when it runs here, else the same
probes memleak puts in place (a uprobe on malloc and on free and a uretprobe on malloc, every call,
the address, size and stack kept in BPF maps) written for bpftrace.

Each round runs every configuration once, in a rotating order (heaptrack and memleak's probes, a
hundred times slower and more, only in the first --slow-rounds); figures are medians over rounds.
Wall: the workload's own timing of its work. CPU: user + system time of the workload and of the
profiler's processes while it ran (uprobes run in the workload's system time), against the workload
alone. memleak's probes cost so much per call that they run over a fiftieth of the trees, their
wall and CPU scaled up by that factor (said in the table).
Usage: bench/alloc/run.py BUILD_DIR [--rounds N] [--depth D] [--trees N]. Run as root.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
# memleak's probes: malloc's size at entry, its address and the stack at return, free's address.
MEMLEAK_BT = f"""
uprobe:{LIBC}:malloc /pid == cpid/ {{ @size[tid] = arg0; }}
uretprobe:{LIBC}:malloc /pid == cpid && @size[tid]/ {{
    @live[retval] = @size[tid]; @bystack[ustack] = sum(@size[tid]); delete(@size[tid]); }}
uprobe:{LIBC}:free /pid == cpid/ {{ delete(@live[arg0]); }}
END {{ clear(@live); clear(@size); }}
"""


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_timed(cmd, env=None):
    """(workload's own wall seconds, CPU of cmd and its children)."""
    before = children_cpu()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {p.returncode}: {p.stderr[-500:]}")
    wall = next(float(line.split()[0]) for line in p.stdout.splitlines() if line[:1].isdigit())
    return wall, children_cpu() - before


def run_otelprofd(build, workload, out):
    """`otelprofd --alloc -o FILE -- tree ...` (the library preloaded, the default 512 KiB mean, on-CPU
    samples at 99 Hz too): the workload's wall, and the CPU of both from the moment the daemon said it
    profiles (the BPF load before it is a one-time cost, reported apart) to the profile written."""
    env = dict(os.environ, OTELPROFD_ALLOC_LIB=os.path.join(build, "alloc", "libotelprofd-alloc.so"))
    before = children_cpu()
    p = subprocess.Popen([os.path.join(build, "daemon", "otelprofd"), "--alloc", "-o", os.path.join(out, "alloc.pb.gz"),
                          "--"] + workload, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = ""
    while "Profiling" not in line:
        line = p.stderr.readline()
        if not line:
            raise RuntimeError("otelprofd did not start")
    load = cpu_of(p.pid)
    stdout, stderr = p.communicate(timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"otelprofd exited {p.returncode}: {stderr[-500:]}")
    wall = next(float(x.split()[0]) for x in stdout.splitlines() if x[:1].isdigit())
    return wall, children_cpu() - before - load


MEMLEAK_SHARE = 50


def configurations(build, workload, out):
    lib = os.path.join(build, "alloc", "libotelprofd-alloc.so")
    preload = dict(os.environ, LD_PRELOAD=lib)
    bt_env = dict(os.environ, BPFTRACE_MAP_KEYS_MAX="16000000")

    def alone():
        return run_timed(workload)

    def library():
        return run_timed(workload, preload)

    def otelprofd():
        return run_otelprofd(build, workload, out)

    def heaptrack():
        return run_timed(["heaptrack", "-o", os.path.join(out, "heaptrack")] + workload)

    def memleak():
        trees = max(1, int(workload[2]) // MEMLEAK_SHARE)
        scale = int(workload[2]) / trees
        wall, cpu = run_timed(["bpftrace", "-c", " ".join(workload[:2] + [str(trees)]), "-e", MEMLEAK_BT], bt_env)
        return wall * scale, cpu * scale

    return {
        "tree alone": alone,
        "libotelprofd-alloc.so preloaded, no daemon": library,
        "libotelprofd-alloc.so + otelprofd --alloc (512 KiB)": otelprofd,
        "heaptrack": heaptrack,
        f"memleak's probes (bpftrace; 1/{MEMLEAK_SHARE} of the trees, scaled)": memleak,
    }


def memleak_bpfcc_runs():
    """bpfcc-tools' memleak compiles its BPF from C at start: it needs the kernel's headers."""
    tool = shutil.which("memleak-bpfcc")
    if not tool:
        return False, "memleak-bpfcc is not installed (Debian's bpfcc-tools)"
    p = subprocess.run([tool, "-c", "true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    if p.returncode == 0:
        return True, ""
    return False, (p.stderr.strip().splitlines() or ["failed"])[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--depth", type=int, default=16)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--slow-rounds", type=int, default=1, help="rounds of heaptrack and memleak's probes")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    workload = [os.path.join(build, "bench", "tree"), str(args.depth), str(args.trees)]
    out = tempfile.mkdtemp(prefix="alloc-bench-")
    runs, why = memleak_bpfcc_runs()
    if not runs:
        print(f"memleak-bpfcc cannot run here ({why}): its probes are measured with bpftrace instead",
              file=sys.stderr)
    configs = configurations(build, workload, out)
    names = list(configs)
    walls = {n: [] for n in names}
    cpus = {n: [] for n in names}
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            if r >= args.slow_rounds and ("heaptrack" in n or "memleak" in n):
                continue
            wall, cpu = configs[n]()
            walls[n].append(wall)
            cpus[n].append(cpu)
            print(f"round {r + 1}: {n}: {wall:.3f} s wall, {cpu:.3f} s CPU", file=sys.stderr, flush=True)
    base_wall, base_cpu = statistics.median(walls[names[0]]), statistics.median(cpus[names[0]])
    print("| configuration | wall (median) | slowdown | CPU, workload + profiler | CPU against alone |")
    print("|---|---|---|---|---|")
    for n in (n for n in names if walls[n]):
        w, c = statistics.median(walls[n]), statistics.median(cpus[n])
        print(f"| {n} | {w:.3f} s | {100 * (w / base_wall - 1):+.1f}% | {c:.3f} s | {100 * (c / base_cpu - 1):+.1f}% |")
    allocs = subprocess.run(workload, stdout=subprocess.PIPE, text=True).stdout.split()[1]
    print(f"\n{allocs} allocations per run; memleak-bpfcc: {'ran' if runs else why}")
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
