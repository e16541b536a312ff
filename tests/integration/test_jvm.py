#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A HotSpot JVM started without any profiling flag, profiled by otelprofd (suite jvm).

tests/jvm/Hot.java spends its time in Hot.mix and Hot.work, JIT-compiled.
- With --no-jvm-attach: the JVM is not asked for a perf map (none appears) and its JIT frames stay
  unnamed (at most 5% of its samples name a Hot method).
- By default: otelprofd triggers the perf map itself through the attach protocol (jcmd
  Compiler.perfmap) and at least 70% of the JVM's samples name a Hot method, as Class.method
  (not HotSpot's "long Hot.mix(long)"); its -v log counts one JVM and a perf map written.
- A JVM of another user (a system user made for the test when absent, the JVM run with setpriv),
  profiled by the daemon as root: the attach broker takes on the JVM's user (HotSpot accepts only
  its own user or root, and the daemon itself has dropped CAP_KILL and CAP_DAC_OVERRIDE), the
  JVM's perf map is written, owned by its user, and >= 70% of its samples name a Hot method.
- The same JVM case with the daemon run as the systemd unit runs it: an unprivileged user (nobody)
  with exactly the unit's ambient capabilities and no new privileges (setpriv).
- The broker: with --no-jvm-attach no process is forked; by default one child of the daemon,
  named otelprofd-jvm, holding exactly CAP_SETGID, CAP_SETUID and CAP_SYS_PTRACE.
"""
import os
import pwd
import re
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
os.chmod(out, 0o755)  # the other user's JVM reads Hot.class from here
OTHER_USER = "otelprofd-jvmtest"
BROKER_NAME = "otelprofd-jvm"
BROKER_CAPS = (1 << 6) | (1 << 7) | (1 << 19)  # CAP_SETGID, CAP_SETUID, CAP_SYS_PTRACE


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


def children(pid):
    """{pid: (comm, CapEff)} of a process's children."""
    found = {}
    try:
        for child in open(f"/proc/{pid}/task/{pid}/children").read().split():
            status = open(f"/proc/{child}/status").read()
            found[int(child)] = (re.search(r"^Name:\s+(.*)$", status, re.M).group(1),
                                 int(re.search(r"^CapEff:\s+(\S+)", status, re.M).group(1), 16))
    except (OSError, AttributeError):
        pass
    return found


def profile(pid, name, extra, wrap=()):
    """Profile pid for 8 s: (folded file, -v log, the daemon's children seen while it ran); wrap: a
    command the daemon runs under (setpriv)."""
    folded = os.path.join(out, name + ".folded")
    args = list(wrap) + [bpftest.otelprofd(), "-p", str(pid), "-F", "199", "-d", "8s", "-o", folded, "-v"] + extra
    print("$", " ".join(args), flush=True)
    log_path = os.path.join(out, name + ".log")
    with open(log_path, "w") as log_file:  # a file, not a pipe: -v says a lot while it is polled
        daemon = subprocess.Popen(args, stdout=log_file, stderr=subprocess.STDOUT)
    seen = {}
    deadline = time.time() + 180
    while daemon.poll() is None and time.time() < deadline:
        seen.update(children(daemon.pid))
        time.sleep(0.2)
    if daemon.poll() is None:
        daemon.kill()
    daemon.wait()
    log = open(log_path, errors="replace").read()
    print(log[-4000:])
    if daemon.returncode != 0:
        bpftest.fail(f"otelprofd exited {daemon.returncode}")
    return folded, log, seen


def as_service_user():
    """setpriv's arguments to run as the unit does: nobody, the unit's ambient capabilities."""
    unit = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(SOURCE)))), "systemd",
                        "otelprofd.service.in")
    caps = re.search(r"^AmbientCapabilities=(.*)$", open(unit).read(), re.M).group(1).split()
    names = ",".join("+" + c[len("CAP_"):].lower() for c in caps)
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", f"--inh-caps=-all,{names}",
            f"--ambient-caps=-all,{names}", f"--bounding-set=-all,{names}", "--no-new-privs"]


def check_other_user(name, user, wrap=()):
    """A fresh JVM of user, profiled: its samples named through a perf map its user owns."""
    jvm = start(user)
    try:
        if os.stat(f"/proc/{jvm.pid}").st_uid != user[0]:
            bpftest.fail(f"the JVM does not run as {OTHER_USER}")
        folded, log, _ = profile(jvm.pid, name, [], wrap)
        total, hot, _ = named(folded)
        owner = os.stat(f"/tmp/perf-{jvm.pid}.map").st_uid if perf_map(jvm.pid) else None
        print(f"{name}: {hot} of {total} JVM samples name a Hot method; perf map owned by uid {owner}")
        if total < 200 or hot < 0.70 * total:
            failures.append(f"{name}: {hot} of {total} samples name a Hot method")
        if owner != user[0]:
            failures.append(f"{name}: the JVM's perf map is owned by uid {owner}, not its user's {user[0]}")
        if "jvm: 1 HotSpot processes, 1 perf maps written" not in log:
            failures.append(f"{name}: the -v log does not count the JVM and its perf map")
    finally:
        cleanup(jvm)


def other_user():
    """A system user for the other JVM, made when absent: (uid, gid)."""
    try:
        pw = pwd.getpwnam(OTHER_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--user-group", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", OTHER_USER], check=True, timeout=60)
        pw = pwd.getpwnam(OTHER_USER)
    return pw.pw_uid, pw.pw_gid


def start(user=None):
    cmd = [java, "-cp", out, "Hot", "120"]
    if user:
        cmd = ["setpriv", f"--reuid={user[0]}", f"--regid={user[1]}", "--clear-groups"] + cmd
    jvm = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, cwd="/")
    # Compiled before the profile starts: the JIT's first minutes are not what this tests.
    deadline = time.time() + 60
    while time.time() < deadline:
        with open(f"/proc/{jvm.pid}/maps") as f:
            if "libjvm.so" in f.read():
                break
        time.sleep(0.2)
    time.sleep(3)
    return jvm


def cleanup(jvm):
    jvm.kill()
    jvm.wait()
    for name in (f".java_pid{jvm.pid}", f"perf-{jvm.pid}.map"):
        try:
            os.unlink(os.path.join("/tmp", name))
        except OSError:
            pass


failures = []
jvm = start()
try:
    folded, _, seen = profile(jvm.pid, "off", ["--no-jvm-attach"])
    # By name: under ASan, LeakSanitizer's tracer at exit is a child too (named otelprofd).
    if any(comm == BROKER_NAME for comm, _ in seen.values()):
        failures.append(f"--no-jvm-attach: the daemon forked the broker: {seen}")
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

    folded, log, seen = profile(jvm.pid, "on", [])
    total, hot, odd = named(folded)
    print(f"default: {hot} of {total} JVM samples name a Hot method; perf map: {perf_map(jvm.pid)}")
    if total < 200 or hot < 0.70 * total:
        failures.append(f"default: {hot} of {total} samples name a Hot method")
    if odd:
        failures.append(f"HotSpot's signatures kept in names: {sorted(odd)[:3]}")
    if "jvm: 1 HotSpot processes, 1 perf maps written" not in log:
        failures.append("the -v log does not count the JVM and its perf map")
    brokers = {pid: caps for pid, (comm, caps) in seen.items() if comm == BROKER_NAME}
    print(f"the daemon's children while it ran: {seen}")
    if len(brokers) != 1 or any(caps != BROKER_CAPS for caps in brokers.values()):
        failures.append(f"default: the broker's capabilities are {seen}, not one {BROKER_NAME} with {BROKER_CAPS:#x}")
finally:
    cleanup(jvm)

if os.geteuid() != 0:
    print("SKIP the other user's JVM: making a user and running a JVM as it needs root")
else:
    user = other_user()
    check_other_user("daemon as root, JVM as " + OTHER_USER, user)
    # The daemon as the unit's user writes its output into a directory it may write.
    os.chmod(out, 0o777)
    check_other_user("daemon as nobody with the unit's capabilities, JVM as " + OTHER_USER, user, as_service_user())
if failures:
    bpftest.fail("; ".join(failures))
print("PASS")
