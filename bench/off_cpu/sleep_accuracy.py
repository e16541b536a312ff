#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How close an ad hoc `--off-cpu --pid` run reads one sleeping thread's true sleep time.

A Python thread sleeps 10 ms at a time for 9 s and times its own sleep; otelprofd attaches after
1 s for a 6 s run. Each round prints the off-CPU time of the stacks through a sleep against the
6 s times the share of its life the thread spent asleep (its own clock).
Usage: bench/off_cpu/sleep_accuracy.py OTELPROFD [--rounds N] [-- EXTRA OTELPROFD FLAGS...]
(for example `-- --off-cpu-probability 0.05` for the sampled read). Run as root."""
import argparse
import os
import subprocess
import sys
import tempfile
import time

SLEEPER = """
import time
start = time.monotonic(); slept = 0.0
while time.monotonic() - start < 9:
    a = time.monotonic(); time.sleep(0.01); slept += time.monotonic() - a
print(slept / (time.monotonic() - start), flush=True)
"""
RUN_SECONDS = 6


def one_round(otelprofd, extra, folded):
    sleeper = subprocess.Popen([sys.executable, "-c", SLEEPER], stdout=subprocess.PIPE, text=True)
    time.sleep(1)
    subprocess.run([otelprofd, "--pid", str(sleeper.pid), "--off-cpu", "-d", f"{RUN_SECONDS}s", "-q",
                    "-o", folded] + extra, check=True)
    asleep_share = float(sleeper.communicate(timeout=30)[0])
    off_cpu_us = 0
    with open(folded.replace(".folded", ".off-cpu.folded")) as f:
        for line in f:
            stack, us = line.rsplit(" ", 1)
            if "sleep" in stack:
                off_cpu_us += int(us)
    return off_cpu_us / 1e6, off_cpu_us / 1e6 / (RUN_SECONDS * asleep_share)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("otelprofd")
    parser.add_argument("--rounds", type=int, default=4)
    args, extra = parser.parse_known_args()
    args.extra = [a for a in extra if a != "--"]
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            seconds, ratio = one_round(args.otelprofd, args.extra, os.path.join(tmp, f"r{i}.folded"))
            print(f"round {i + 1}: {seconds:.3f} s off CPU in sleep over a {RUN_SECONDS} s run: {ratio:.3f}x the truth",
                  flush=True)


if __name__ == "__main__":
    main()
