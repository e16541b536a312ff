#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Start-up CPU of otelprofd builds on a host with no Python or Go process to profile: each build
profiles one sleeping process (`--pid`, so the host's other processes, Python and Go ones included,
are never sampled) for one second and writes a folded file; its user + system CPU is measured with
getrusage(RUSAGE_CHILDREN), the builds in alternating order, and the median, lowest and highest of
the runs printed as a Markdown table, with each build's verified instruction count at start.

  bench/startup_cpu.py [--runs 12] NAME=BINARY[:ENV=VALUE] ...

--workload "COMMAND" profiles that command's process instead of the sleeper (for example
`dd if=/dev/zero of=/dev/null bs=512`, whose samples have kernel frames: the run then includes the
first profile with a kernel frame, and the /proc/kallsyms read it brings), or build/bench/syscalls
(system calls in a loop, static and without debug information: kernel frames with next to no user
symbolizing, so the run is the start and the kernel symbols). The kernel symbols come from the
per-boot cache file when an earlier run of the boot saved it; a NAME=BINARY:OTELPROFD_KALLSYMS_CACHE=
entry runs without it (a boot's first run, but for the save).

A NAME=BINARY:OTELPROFD_RUNTIMES_AT_START=1 entry runs the binary with that variable set. The
output goes to a temporary directory, never -o /dev/null: builds before the fix of output_file.c
renamed their output over it, turning the host's /dev/null into a regular file. Run as root.
"""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--workload", default="sleep 3600", help="the command whose process is profiled")
    ap.add_argument("builds", nargs="+", metavar="NAME=BINARY[:ENV=VALUE]")
    args = ap.parse_args()
    builds = []
    for spec in args.builds:
        name, _, rest = spec.partition("=")
        binary, _, env = rest.partition(":")
        builds.append((name, binary, dict([env.split("=", 1)]) if env else {}))
    tmp = tempfile.mkdtemp(prefix="otelprofd-startup-")
    sleeper = subprocess.Popen(args.workload.split(), stdout=subprocess.DEVNULL)
    cpu = {name: [] for name, _, _ in builds}
    verified = {}
    try:
        for run in range(args.runs):
            for name, binary, extra in builds[run % len(builds):] + builds[:run % len(builds)]:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                p = subprocess.run([binary, "--pid", str(sleeper.pid), "-d", "1s", "-v",
                                    "-o", os.path.join(tmp, "out.folded")],
                                   env={**os.environ, **extra}, stderr=subprocess.PIPE, text=True, check=True)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[name].append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
                m = re.search(r"BPF programs loaded in .*?(\d+) instructions verified", p.stderr)
                verified[name] = m.group(1) if m else "?"
    finally:
        sleeper.kill()
        shutil.rmtree(tmp)
    print(f"| build | start-up CPU ms, median of {args.runs} | lowest | highest | instructions verified at start |")
    print("|---|---|---|---|---|")
    for name, _, _ in builds:
        v = cpu[name]
        print(f"| {name} | {statistics.median(v):.1f} | {min(v):.1f} | {max(v):.1f} | {verified[name]} |")


if __name__ == "__main__":
    main()
