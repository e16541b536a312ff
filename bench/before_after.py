#!/usr/bin/python3
"""One change's cost on the on-CPU path: two otelprofd builds (a baseline, e.g. the commit before the
change, and this tree) over the same CPU-bound workload, in alternating order, exporting OTLP to the
test collector as in bench/run.py. Prints a Markdown table of medians: the workload's slowdown, the
CPU each otelprofd took from the workload (its own CPU and its BPF programs' run time, measured
directly: the sharp figure on a noisy machine), BPF ns per program run, and peak RSS.

  bench/before_after.py --baseline BUILD_DIR --build BUILD_DIR [--freqs 19,99] [--runs 5] [--units 5200]

Both build directories need bench/cpu_bench and tests/otlp/test-collector (a meson build of the tree
with tests on). Run as root on an otherwise idle machine.
"""
import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as bench  # noqa: E402  (bench/run.py: the profiler runner and the collector)


def measure(builds, freq, runs, units, tmp):
    """{name: [dict(time, taken, bpf_ns_per_run, rss, samples)]} and the workload's times alone."""
    work = [os.path.join(builds["this tree"], "bench", "cpu_bench"), str(os.cpu_count()), str(units)]
    order = ["alone"] + list(builds)
    rows = {k: [] for k in order}
    for r in range(runs):
        for k in order[r % len(order):] + order[:r % len(order)]:
            if k == "alone":
                rows[k].append(dict(time=bench.run_workload(work)))
                continue
            prof = bench.Otelprofd(builds[k], freq, tmp)
            prof.start()
            t = bench.run_workload(work)
            steady, _, rss = prof.stop()
            rows[k].append(dict(time=t, rss=rss, samples=prof.samples(),
                                taken=100 * (steady + prof.bpf_ns / 1e9) / (t * os.cpu_count()),
                                bpf_ns=prof.bpf_ns / max(prof.bpf_runs, 1)))
        bench.log(f"  {freq} Hz round {r + 1}/{runs}: " +
                  ", ".join(f"{k} {rows[k][-1]['time']:.3f}s" for k in order))
    return rows


def report(freq, rows):
    alone = [r["time"] for r in rows["alone"]]
    med = statistics.median(alone)
    noise = 100 * statistics.median(abs(t - med) for t in alone) / med
    print(f"\n### {freq} Hz (workload alone {med:.3f} s, noise floor ±{noise:.2f}%)\n")
    print("| otelprofd | slowdown | CPU taken from the workload | BPF ns / run | samples | peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for k, rs in rows.items():
        if k == "alone":
            continue
        slow = 100 * statistics.median(r["time"] / a - 1 for r, a in zip(rs, alone))
        print(f"| {k} | {slow:+.2f}% | {statistics.median(r['taken'] for r in rs):.3f}% | "
              f"{statistics.median(r['bpf_ns'] for r in rs):.0f} | {statistics.median(r['samples'] for r in rs):.0f} | "
              f"{statistics.median(r['rss'] for r in rs):.1f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="build directory of the baseline")
    ap.add_argument("--build", required=True, help="build directory of this tree")
    ap.add_argument("--freqs", default="19,99")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--units", type=int, default=5200)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("before_after: run as root")
    builds = {"baseline": os.path.abspath(args.baseline), "this tree": os.path.abspath(args.build)}
    tmp = tempfile.mkdtemp(prefix="otelprofd-before-after-")
    stats = "/proc/sys/kernel/bpf_stats_enabled"
    before = open(stats).read().strip()
    open(stats, "w").write("1")
    collector = bench.Collector(builds["this tree"], tmp)
    bench.Otelprofd.collector_port = collector.port
    try:
        results = {int(f): measure(builds, int(f), args.runs, args.units, tmp) for f in args.freqs.split(",")}
    finally:
        collector.stop()
        open(stats, "w").write(before)
    print(f"Command: bench/before_after.py {' '.join(sys.argv[1:])}")
    for freq, rows in results.items():
        report(freq, rows)


if __name__ == "__main__":
    main()
