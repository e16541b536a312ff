#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A HotSpot JVM started without any profiling flag, profiled by otelprofd (suite jvm).

tests/jvm/Hot.java spends its time in Hot.mix and Hot.work, JIT-compiled.
- With --no-jvm-attach: the JVM is not asked for a perf map (none appears) and its JIT frames stay
  unnamed (at most 5% of its samples name a Hot method).
- By default: otelprofd triggers the perf map itself through the attach protocol (jcmd
  Compiler.perfmap) and at least 70% of the JVM's samples name a Hot method, as Class.method
  (not HotSpot's "long Hot.mix(long)"); its -v log counts one JVM and a perf map written.
"""
import os
import shutil
import subprocess
import time

import bpftest

bpftest.require_bpf()
SOURCE = os.environ["JVM_SOURCE"]
out = bpftest.tmpdir()
javac = shutil.which("javac")
java = shutil.which("java")
if not javac or not java:
    bpftest.fail("javac and java are needed (scripts/install-deps.sh: openjdk-17-jdk-headless)")
subprocess.run([javac, "-d", out, SOURCE], check=True, timeout=300)


def named(folded, pid_comm="java"):
    """(samples of the JVM, samples naming a Hot method, names seen) from a folded file."""
    total = hot = 0
    odd = set()
    for stack, count in bpftest.read_folded(folded).items():
        if stack[0] != pid_comm:
            continue
        total += count
        frames = [f for f in stack[1:] if not f.endswith("_[k]")]
        if any(f in ("Hot.mix", "Hot.work", "Hot.main") for f in frames):
            hot += count
        odd.update(f for f in frames if "Hot." in f and "(" in f)
    return total, hot, odd


def other_profilers():
    """Pids of otelprofd processes this test did not start (a system-wide one asks every JVM too)."""
    mine = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/comm") as f:
                if f.read().strip() == "otelprofd" and int(entry) != mine:
                    found.append(int(entry))
        except (OSError, ValueError):
            pass
    return found


def perf_map(pid):
    return os.path.exists(f"/proc/{pid}/root/tmp/perf-{pid}.map")


def profile(pid, name, extra):
    folded = os.path.join(out, name + ".folded")
    run = bpftest.run([bpftest.otelprofd(), "-p", str(pid), "-F", "199", "-d", "8s", "-o", folded, "-v"] + extra,
                      timeout=180)
    return folded, run.stderr


def start():
    jvm = subprocess.Popen([java, "-cp", out, "Hot", "120"], stdout=subprocess.DEVNULL)
    # Compiled before the profile starts: the JIT's first minutes are not what this tests.
    deadline = time.time() + 60
    while time.time() < deadline:
        with open(f"/proc/{jvm.pid}/maps") as f:
            if "libjvm.so" in f.read():
                break
        time.sleep(0.2)
    time.sleep(3)
    return jvm


failures = []
jvm = start()
try:
    folded, _ = profile(jvm.pid, "off", ["--no-jvm-attach"])
    total, hot, _ = named(folded)
    print(f"--no-jvm-attach: {hot} of {total} JVM samples name a Hot method; perf map: {perf_map(jvm.pid)}")
    others = other_profilers()
    if perf_map(jvm.pid) and others:
        print(f"SKIP the --no-jvm-attach check: other otelprofd processes ran ({others}) and asked the JVM")
    else:
        if perf_map(jvm.pid):
            failures.append("--no-jvm-attach: the JVM wrote a perf map")
        if total < 200 or hot > 0.05 * total:
            failures.append(f"--no-jvm-attach: {hot} of {total} samples name a Hot method")

    folded, log = profile(jvm.pid, "on", [])
    total, hot, odd = named(folded)
    print(f"default: {hot} of {total} JVM samples name a Hot method; perf map: {perf_map(jvm.pid)}")
    if total < 200 or hot < 0.70 * total:
        failures.append(f"default: {hot} of {total} samples name a Hot method")
    if odd:
        failures.append(f"HotSpot's signatures kept in names: {sorted(odd)[:3]}")
    if "jvm: 1 HotSpot processes, 1 perf maps written" not in log:
        failures.append("the -v log does not count the JVM and its perf map")
finally:
    jvm.kill()
    jvm.wait()
    for name in (f".java_pid{jvm.pid}", f"perf-{jvm.pid}.map"):
        try:
            os.unlink(os.path.join("/tmp", name))
        except OSError:
            pass
if failures:
    bpftest.fail("; ".join(failures))
print("PASS")
