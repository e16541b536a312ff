#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""One change's cost on the on-CPU path: two otelprofd builds (a baseline, e.g. the commit before the
change, and this tree) over the same CPU-bound workload, in alternating order, exporting OTLP to the
test collector as in bench/run.py. Prints a Markdown table of medians: the workload's slowdown, the
CPU each otelprofd took from the workload (its own CPU and its BPF programs' run time, measured
directly: the sharp figure on a noisy machine), BPF ns per program run, and peak RSS.

  bench/before_after.py --baseline BUILD_DIR --build BUILD_DIR [--freqs 19,99] [--runs 5] [--units 5200]
                        [--variant NAME=ARGS ...]

--variant adds this tree run with extra arguments (e.g. --variant "no trace=--no-trace-context"), to
split a difference by cause.

--together runs every build at once over the same workload instead of one after the other: each
sees the same load, so their own CPU per 1000 samples and BPF ns per run compare fairly on a busy
machine (where the one-after-the-other slowdowns are noise). The workload's slowdown is then not
measured.

Both build directories need bench/cpu_bench and tests/otlp/test-collector (a meson build of the tree
with tests on). Run as root on an otherwise idle machine.
"""
import argparse
import os
import shlex
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as bench  # noqa: E402  (bench/run.py: the profiler runner and the collector)


class Variant(bench.Otelprofd):
    """otelprofd with extra command-line arguments."""
    extra = []

    def command(self):
        return super().command() + self.extra


def profiler(build, freq, tmp):
    """An otelprofd runner for builds[k]: a build directory, or (build directory, extra arguments)."""
    if isinstance(build, tuple):
        prof = Variant(build[0], freq, tmp)
        prof.extra = build[1]
        return prof
    return bench.Otelprofd(build, freq, tmp)


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
            prof = profiler(builds[k], freq, tmp)
            prof.start()
            t = bench.run_workload(work)
            steady, _, rss = prof.stop()
            rows[k].append(dict(time=t, rss=rss, samples=prof.samples(),
                                taken=100 * (steady + prof.bpf_ns / 1e9) / (t * os.cpu_count()),
                                bpf_ns=prof.bpf_ns / max(prof.bpf_runs, 1)))
        bench.log(f"  {freq} Hz round {r + 1}/{runs}: " +
                  ", ".join(f"{k} {rows[k][-1]['time']:.3f}s" for k in order))
    return rows


def measure_together(builds, freq, runs, units, tmp):
    """{name: [dict(cpu_ms_per_1000, bpf_ns, rss, samples)]}: every build profiling the same run."""
    work = [os.path.join(builds["this tree"], "bench", "cpu_bench"), str(os.cpu_count()), str(units)]
    names = list(builds)
    rows = {k: [] for k in names}
    for r in range(runs):
        order = names[r % len(names):] + names[:r % len(names)]
        profs = {k: profiler(builds[k], freq, tmp) for k in order}
        for k in order:
            profs[k].name = f"otelprofd {k}"
            profs[k].start()
        bench.run_workload(work)
        for k in order:
            steady, _, rss = profs[k].stop()
            n = profs[k].samples()
            rows[k].append(dict(rss=rss, samples=n, cpu=1000 * steady / max(n, 1) * 1000,
                                bpf_ns=profs[k].bpf_ns / max(profs[k].bpf_runs, 1)))
        bench.log(f"  {freq} Hz round {r + 1}/{runs}: " +
                  ", ".join(f"{k} {rows[k][-1]['cpu']:.1f} ms/1000" for k in names))
    return rows


def report_together(freq, rows):
    print(f"\n### {freq} Hz, every build at once\n")
    print("| otelprofd | own CPU ms per 1000 samples | BPF ns / run | samples | peak RSS MiB |")
    print("|---|---|---|---|---|")
    for k, rs in rows.items():
        print(f"| {k} | {statistics.median(r['cpu'] for r in rs):.1f} | "
              f"{statistics.median(r['bpf_ns'] for r in rs):.0f} | {statistics.median(r['samples'] for r in rs):.0f} | "
              f"{statistics.median(r['rss'] for r in rs):.1f} |")


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
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                    help="also run this tree with extra arguments (repeatable)")
    ap.add_argument("--together", action="store_true", help="run every build at once over the same workload")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("before_after: run as root")
    builds = {"baseline": os.path.abspath(args.baseline), "this tree": os.path.abspath(args.build)}
    for v in args.variant:
        name, sep, extra = v.partition("=")
        if not sep or not name or name in builds:
            sys.exit(f"before_after: --variant wants a new NAME=ARGS, not {v!r}")
        builds[f"this tree {name}"] = (os.path.abspath(args.build), shlex.split(extra))
    tmp = tempfile.mkdtemp(prefix="otelprofd-before-after-")
    stats = "/proc/sys/kernel/bpf_stats_enabled"
    before = open(stats).read().strip()
    open(stats, "w").write("1")
    collector = bench.Collector(builds["this tree"], tmp)
    bench.Otelprofd.collector_port = collector.port
    try:
        how = measure_together if args.together else measure
        results = {int(f): how(builds, int(f), args.runs, args.units, tmp) for f in args.freqs.split(",")}
    finally:
        collector.stop()
        open(stats, "w").write(before)
    print(f"Command: bench/before_after.py {' '.join(sys.argv[1:])}")
    for freq, rows in results.items():
        (report_together if args.together else report)(freq, rows)


if __name__ == "__main__":
    main()
