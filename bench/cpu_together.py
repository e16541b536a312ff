#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""CPU to a symbolized profile (issue 30 item 3) with every profiler running at once, system-wide,
over one run of the workload: this tree's otelprofd, a baseline build's, `perf record -g` (plus
`perf report` on its data afterwards) and bpftrace. On a shared, loaded machine, profilers run one
after the other see different loads (other sessions' processes, each new program to read and
open); at once, they see the same host, so their CPU per 1000 samples compares fairly.

  bench/cpu_together.py --build BUILD_DIR --baseline BUILD_DIR [--freq 99] [--runs 3] [--units 450]
                        [--seconds S]

Per profiler and round: its whole life's CPU (start-up, sampling, final output; wait4), plus perf
report's, over the samples it kept (otelprofd: of processes, exported as OTLP to the test collector
as in bench/run.py; perf and bpftrace: of busy CPUs). Prints a Markdown table: per round and the
median of the per-round figures, and each otelprofd's ratio to perf -g + report and to bpftrace.
Run as root.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as bench  # noqa: E402  (bench/run.py: the profiler runners and the collector)


class Baseline(bench.Otelprofd):
    name = "otelprofd (baseline)"
    directory = None

    def __init__(self, build, freq, tmp):
        super().__init__(self.directory, freq, tmp)


def one_round(kinds, build, freq, units, seconds, tmp):
    work = [os.path.join(build, "bench", "cpu_bench"), str(os.cpu_count()), str(units)]
    profs = [k(build, freq, tmp) for k in kinds]
    for p in profs:
        p.start()
    try:
        subprocess.run(work, capture_output=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        pass  # a loaded machine: the profilers sampled the same host meanwhile, which is what counts here
    rows = {}
    for p in reversed(profs):
        _, total, rss = p.stop()
        rows[p.name] = dict(total=total, report=p.report_cpu(), samples=p.samples(), rss=rss)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--freq", type=int, default=99)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--units", type=int, default=450)
    ap.add_argument("--seconds", type=float, default=None, help="stop the workload after this long")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: run as root (the profilers need it)")
    Baseline.directory = os.path.abspath(args.baseline)
    build = os.path.abspath(args.build)
    kinds = [bench.Otelprofd, Baseline, bench.PerfFP, bench.Bpftrace]
    tmp = tempfile.mkdtemp(prefix="otelprofd-together-")
    collector = bench.Collector(build, tmp)
    bench.Otelprofd.collector_port = collector.port
    rounds = []
    try:
        for r in range(args.runs):
            order = kinds[r % len(kinds):] + kinds[:r % len(kinds)]
            rounds.append(one_round(order, build, args.freq, args.units, args.seconds, tmp))
            bench.log(f"round {r + 1}/{args.runs}: " + ", ".join(
                f"{k} {v['total'] + v['report']:.3f} s / {v['samples']}" for k, v in rounds[-1].items()))
    finally:
        bench.Otelprofd.collector_port = None
        collector.stop()

    def per_1000(row):
        return 1e6 * (row["total"] + row["report"]) / row["samples"] if row["samples"] else float("nan")

    names = [k.name for k in kinds]
    print("| profiler | " + " | ".join(f"round {i + 1}: CPU s / samples (ms per 1000)" for i in range(len(rounds))) +
          " | ms per 1000 samples (median) |")
    print("|---|" + "---|" * (len(rounds) + 1))
    med = {}
    for n in names:
        cells = [f"{r[n]['total'] + r[n]['report']:.3f} / {r[n]['samples']} ({per_1000(r[n]):.0f})" for r in rounds]
        med[n] = statistics.median(per_1000(r[n]) for r in rounds)
        print(f"| {n} | " + " | ".join(cells) + f" | {med[n]:.0f} |")
    print()
    for n in names[:2]:
        ratios = [(per_1000(r[n]) / per_1000(r["perf -g"]), per_1000(r[n]) / per_1000(r["bpftrace"])) for r in rounds]
        print(f"- {n}: {statistics.median(a for a, _ in ratios):.2f}x perf -g + report, "
              f"{statistics.median(b for _, b in ratios):.2f}x bpftrace (medians of the per-round ratios; "
              f"rounds: " + ", ".join(f"{a:.2f}x/{b:.2f}x" for a, b in ratios) + ")")


if __name__ == "__main__":
    main()
