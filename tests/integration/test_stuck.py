#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Never stuck (issue 27), against the real daemon and a busy program with large compressed debug
info (tests/workloads/gen-heavy.py: ~4 MiB on disk, ~8.6 MiB of DWARF inflated, as libc6-dbg's
separate debug file is for libc).

1. The issue's reproduction: a 5 s run at 99 Hz with --symbol-cache 16MiB. Before the fix it ran for
   58.8 s (the program's module left the cache as soon as it was opened, and every sample inflated
   its DWARF again: 504 opens, 700 samples dropped). Now the run ends within its deadline + 2 s, the
   program is served by the symbols tier (said once), its functions are still named, drops are
   counted, and the daemon's CPU stays under --max-cpu 50.
2. Shedding and SIGTERM: 999 Hz under --max-cpu 0.25 (under what the daemon takes at that rate,
   0.7% measured). /metrics says the ceiling, the level and the samples the kernel shed for it
   (the daemon's CPU while sampling and its loop's longest turn are printed: bench/stuck/ measures them);
   SIGTERM in the middle of the run ends it within SIGTERM_BOUND seconds, with the profile written.
3. SIGTERM while a module open (made 5 s slow on purpose) still runs: the exit does not wait for it."""
import os
import re
import signal
import subprocess
import time
import urllib.request

import bpftest

HEAVY = os.environ["HEAVY_WORKLOAD"]
DURATION = 5
SIGTERM_BOUND = 1.0  # issue 27: "-d and SIGTERM end the run within 1 s, with the profile written"
CEILING = 0.25  # percent of one CPU: under what this daemon takes at 999 Hz (0.7% measured), so it sheds

bpftest.require_bpf()
out = bpftest.tmpdir()


def cpu_seconds(pid):
    """The CPU its main thread (the loop: every record's path) has run so far, in ns precision
    (/proc/PID/schedstat: clock ticks would be too coarse a grain for a ceiling under 1%)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def start(args):
    """otelprofd started and profiling: (process, its log so far, when it said so, its CPU then)."""
    daemon = subprocess.Popen([bpftest.otelprofd()] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    log = bpftest.wait_profiling(daemon, others=[workload])
    return daemon, log, time.monotonic(), cpu_seconds(daemon.pid)


def finish(daemon, log, timeout):
    """The rest of its log, when it ended, and its total CPU (wait4's rusage)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = daemon.stderr.readline()
        if not line:
            break
        log += line
    else:
        daemon.kill()
        bpftest.fail(f"otelprofd still runs after {timeout} s:\n" + log[-3000:])
    ended = time.monotonic()
    _, status, usage = os.wait4(daemon.pid, 0)
    daemon.returncode = os.waitstatus_to_exitcode(status)
    print(log[-2500:])
    if daemon.returncode != 0:
        bpftest.fail(f"otelprofd exited {daemon.returncode}")
    return log, ended, usage.ru_utime + usage.ru_stime


def totals(log):
    m = re.search(r"(\d+) samples kept, (\d+) dropped \(.*cpu ceiling (\d+), at exit \d+, stale \d+\)", log)
    if not m:
        bpftest.fail("no end-of-run sample counts in the log")
    return tuple(int(x) for x in m.groups())


def heavy_samples(path):
    stacks = bpftest.read_folded(path)
    return sum(c for s, c in stacks.items() if any(f.startswith("heavy_f") for f in s))


workload = subprocess.Popen([HEAVY, str(2 * DURATION + 30)])
try:
    time.sleep(0.3)  # exec'd and mapped

    # 1. The reproduction.
    folded = os.path.join(out, "repro.folded")
    daemon, log, began, cpu0 = start(["--pid", str(workload.pid), "-F", "99", "-d", f"{DURATION}s",
                                      "--symbol-cache", "16MiB", "--max-cpu", "50", "-v", "-o", folded])
    log, ended, cpu = finish(daemon, log, DURATION + 30)
    kept, dropped, shed = totals(log)
    notices = re.findall(r"Symbolizing \S*heavy .*ELF symbols only", log)
    named = heavy_samples(folded)
    run_cpu = (cpu - cpu0) / (ended - began)
    turn = re.search(r"loop: the longest turn took ([0-9.]+) ms", log)
    print(f"repro: ended {ended - began:.2f} s after profiling began ({DURATION} s run), {kept} kept, "
          f"{dropped} dropped ({shed} over the CPU ceiling), {named} samples in heavy_f*, "
          f"CPU {100 * run_cpu:.1f}% while sampling, {cpu:.2f} s in all, notices {len(notices)}, "
          f"longest loop turn {turn.group(1) if turn else '?'} ms")
    if not turn:
        bpftest.fail("otelprofd -v did not say its loop's longest turn")
    if ended - began > DURATION + 2:
        bpftest.fail(f"a {DURATION} s run ended {ended - began:.1f} s after it began")
    if len(notices) != 1:
        bpftest.fail(f"the symbols tier of the heavy program said {len(notices)} times, not once")
    if kept < DURATION * 99 / 10 or named < kept / 2:
        bpftest.fail(f"{kept} samples kept, {named} of them in heavy_f* (named from its ELF symbols)")
    if dropped > kept / 10:
        bpftest.fail(f"{dropped} samples dropped of {kept + dropped}")
    if run_cpu > 0.5:
        bpftest.fail(f"otelprofd took {100 * run_cpu:.0f}% of a CPU while sampling, over --max-cpu 50")

    # 2. Shedding under --max-cpu 0.25, and SIGTERM in the middle.
    folded = os.path.join(out, "term.folded")
    port = bpftest.free_port()
    daemon, log, began, cpu0 = start(["--pid", str(workload.pid), "-F", "999", "-d", "60s",
                                      "--symbol-cache", "16MiB", "--max-cpu", str(CEILING),
                                      "--metrics-address", f"127.0.0.1:{port}", "-o", folded])
    time.sleep(3)
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    cpu_term = cpu_seconds(daemon.pid)
    term_at = time.monotonic()
    daemon.send_signal(signal.SIGTERM)
    log, ended, cpu = finish(daemon, log, 60)

    def metric(name):
        m = re.search(r"^" + re.escape(name) + r" ([0-9.e+-]+)$", metrics, re.M)
        if not m:
            bpftest.fail(f"{name} not in /metrics")
        return float(m.group(1))
    ceiling = metric("otelprofd_cpu_ceiling_percent")
    level = metric("otelprofd_cpu_shed_level")
    shed_read = metric('otelprofd_samples_dropped_total{reason="cpu_ceiling"}')
    shed_kernel = metric('otelprofd_samples_dropped_total{reason="cpu_ceiling_kernel"}')
    sampled_down = metric("otelprofd_samples_sampled_down_total")
    turn_max = metric("otelprofd_loop_turn_max_seconds")
    kept, dropped, shed = totals(log)
    run_cpu = (cpu_term - cpu0) / (term_at - began)
    print(f"term: exit {ended - term_at:.2f} s after SIGTERM; {kept} kept, {dropped} dropped ({shed} over the "
          f"ceiling; /metrics said {shed_read:.0f} as read, {shed_kernel:.0f} in the kernel, {sampled_down:.0f} "
          f"sampled down in the kernel, level {level:.0f}, ceiling {ceiling}); CPU {100 * run_cpu:.2f}% while "
          f"sampling; longest loop turn {1000 * turn_max:.1f} ms; profile "
          f"{os.path.getsize(folded) if os.path.exists(folded) else 0} B")
    if ended - term_at > SIGTERM_BOUND:
        bpftest.fail(f"otelprofd exited {ended - term_at:.2f} s after SIGTERM (bound {SIGTERM_BOUND} s)")
    if heavy_samples(folded) == 0:
        bpftest.fail("the profile written at SIGTERM has no heavy_f* samples")
    # Over the ceiling the kernel sheds: the samples it left out are counted, either stood for by the
    # kept ones' weight (1 in N kept) or lost while a second's share was spent.
    if ceiling != CEILING or shed_kernel + sampled_down <= 0 or shed <= 0:
        bpftest.fail(f"/metrics: ceiling {ceiling}, samples shed in the kernel {shed_kernel} + {sampled_down}; "
                     f"end of run: {shed} dropped for it")
    if not re.search(r"CPU ceiling .* samples dropped for it \(\d+ in the kernel, \d+ as read\), \d+ more shed "
                     r"in the kernel", log):
        bpftest.fail("the end of the run does not say what the kernel shed")
    # The CPU figure itself is printed above, not asserted: a shared machine's noise is larger than a
    # ceiling this low. Before the kernel shed (it read and discarded 999 records a second) it was
    # 0.16-0.28% on a quiet machine and 0.48% beside other builds; bench/stuck/cpu_ceiling.sh
    # measures it (bench/RESULTS.md).

    # 3. SIGTERM while a module is still opening (every open in the symbolizer's thread 5 s late, on
    # purpose, as a file slow to read would be): the exit does not wait for it (the open is left to
    # its thread), and the profile is written with what is there. Before, the exit waited for it.
    folded = os.path.join(out, "opening.folded")
    os.environ["OTELPROFD_TEST_OPEN_DELAY_MS"] = "5000"
    try:
        daemon, log, began, _ = start(["--pid", str(workload.pid), "-F", "99", "-d", "60s", "-v", "-o", folded])
    finally:
        del os.environ["OTELPROFD_TEST_OPEN_DELAY_MS"]
    time.sleep(1.5)
    term_at = time.monotonic()
    daemon.send_signal(signal.SIGTERM)
    log, ended, _ = finish(daemon, log, 30)
    written = sum(bpftest.read_folded(folded).values()) if os.path.exists(folded) else 0
    turns = re.search(r"loop: the longest turn took .*", log)
    print(f"opening: exit {ended - term_at:.2f} s after SIGTERM, an open still running; {written} samples "
          f"written; {turns.group(0) if turns else 'no loop line'}")
    if ended - term_at > SIGTERM_BOUND:
        bpftest.fail(f"otelprofd exited {ended - term_at:.2f} s after SIGTERM while a module was opening "
                     f"(bound {SIGTERM_BOUND} s)")
    if written == 0:
        bpftest.fail("the profile written at SIGTERM, a module still opening, has no samples")
finally:
    workload.kill()
    workload.wait()
print("PASS")
