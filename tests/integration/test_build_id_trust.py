#!/usr/bin/env python3
"""Build-id poisoning end to end: an unprivileged user (nobody) runs a program carrying a victim's
build id with INJECTED_BY_ATTACKER at the victim's hot function; otelprofd profiles the whole host
and caches the attacker's module first; the victim, started later by root, must be reported with
its own names."""
import os
import shutil
import signal
import subprocess
import time

import bpftest

bpftest.require_bpf()
programs = os.environ["SYM_PROGRAMS"]
out = bpftest.tmpdir()
os.chmod(out, 0o755)
for name in ("victim", "attacker"):
    shutil.copy(os.path.join(programs, name), out)
folded = os.path.join(out, "trust.folded")

attacker = subprocess.Popen(["runuser", "-u", "nobody", "--", os.path.join(out, "attacker"), "9"],
                            stdout=subprocess.DEVNULL)
daemon = subprocess.Popen([bpftest.otelprofd(), "--frequency", "199", "--duration", "7s", "-o", folded])
victim = None


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


try:
    time.sleep(3)  # the attacker's samples are unwound first: its module is cached before the victim runs
    # The victim outlives the run, so its module can always be opened again when the profile is built
    # (on a loaded host a system-wide run may evict it before: an exited process is then unnamed).
    victim = subprocess.Popen([os.path.join(out, "victim"), "9"], stdout=subprocess.DEVNULL)
    rc = daemon.wait(timeout=60)
finally:
    # runuser does not pass SIGKILL on to the attacker it started
    for pid in children(attacker.pid):
        os.kill(pid, signal.SIGKILL)
    for p in (attacker, victim, daemon):
        if p and p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait()
if rc != 0:
    bpftest.fail("otelprofd exited %d" % rc)

stacks = bpftest.read_folded(folded)
mine = {s: n for s, n in stacks.items() if s[0] == "victim"}
theirs = {s: n for s, n in stacks.items() if s[0] == "attacker"}
print("victim stacks:", sorted(mine.items(), key=lambda x: -x[1])[:3])
print("attacker stacks:", sorted(theirs.items(), key=lambda x: -x[1])[:3])
if not any("INJECTED_BY_ATTACKER" in s for s in theirs):
    bpftest.fail("the attacker's own samples do not name its symbol: the test proves nothing")
if not any("victim_hot" in s for s in mine):
    bpftest.fail("no victim sample in its hot function")
poisoned = sum(n for s, n in mine.items() if "INJECTED_BY_ATTACKER" in s)
if poisoned:
    bpftest.fail("%d victim samples carry the attacker's name" % poisoned)
print("PASS")
