#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The systemd unit verifies, its security exposure stays under our bound, and it keeps the settings
the daemon depends on. Bound: 2.8 ("OK" in systemd-analyze's words); the unit scores 2.8 (see
docs/operations.md, "Hardening"). What keeps it from lower: the capabilities sampling needs (CAP_BPF,
CAP_PERFMON, CAP_SYS_PTRACE, CAP_SYSLOG...), CAP_SETUID and CAP_SETGID for the JVM attach broker
(0.3: without them JVMs of other users stay unnamed), network access for the exporter, and no
ProtectKernelTunables/ProtectKernelLogs (both hide /proc/kallsyms addresses)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

MAX_EXPOSURE = 2.8
unit = os.environ["SYSTEMD_UNIT"]
man = os.environ["MAN_PAGE"]
text = open(unit).read()


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


if not shutil.which("systemd-analyze"):
    fail("systemd-analyze is missing (package systemd)")

# Documentation=man:otelprofd(8) is checked by verify: point man at our page.
mandir = tempfile.mkdtemp()
os.makedirs(os.path.join(mandir, "man8"))
shutil.copy(man, os.path.join(mandir, "man8", "otelprofd.8"))
env = dict(os.environ, MANPATH=mandir)
# verify also wants ExecStart's binary to exist: use a copy of the unit pointing at the build.
work = tempfile.mkdtemp()
local_unit = os.path.join(work, "otelprofd.service")
exec_line = re.search(r"^ExecStart=(\S+)", text, re.M).group(1)
open(local_unit, "w").write(text.replace(exec_line, os.environ["OTELPROFD"]))

v = subprocess.run(["systemd-analyze", "verify", local_unit], env=env, capture_output=True, text=True)
print(v.stdout + v.stderr)
if v.returncode != 0:
    fail("systemd-analyze verify failed")

s = subprocess.run(["systemd-analyze", "security", "--offline=yes", local_unit], env=env,
                   capture_output=True, text=True)
m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", s.stdout + s.stderr)
if not m:
    fail("no exposure level in systemd-analyze security output:\n" + s.stdout + s.stderr)
exposure = float(m.group(1))
print(f"exposure {exposure} (bound {MAX_EXPOSURE})")
if exposure > MAX_EXPOSURE:
    fail(f"exposure {exposure} is above {MAX_EXPOSURE}")

settings = {}
for line in text.splitlines():
    if "=" in line and not line.startswith("#"):
        k, _, v2 = line.partition("=")
        settings.setdefault(k.strip(), []).append(v2.strip())
required = {
    "Type": "notify", "Restart": "on-failure", "NoNewPrivileges": "yes", "ProtectSystem": "strict",
    "ProtectHome": "yes", "PrivateTmp": "yes", "PrivateMounts": "yes", "ProtectProc": "ptraceable",
}
for k, want in required.items():
    if settings.get(k) != [want]:
        fail(f"{k}= is {settings.get(k)}, expected {want}")
for k in ("WatchdogSec", "RestartSec", "TimeoutStopSec", "MemoryMax", "CPUWeight"):
    if k not in settings:
        fail(f"{k}= is missing")
# Its CPU is bounded by its own ceiling (max-cpu), not by a low weight or nice that keeps its loop
# waiting for a CPU on a busy host (docs/operations.md, "The service's share of the CPUs").
if settings.get("CPUWeight") != ["100"] or "Nice" in settings:
    fail(f"CPUWeight= is {settings.get('CPUWeight')} and Nice= {settings.get('Nice')}, expected 100 and none")
filters = " ".join(settings.get("SystemCallFilter", []))
for call in ("bpf", "perf_event_open"):
    if not re.search(rf"(^|\s){call}(\s|$)", settings["SystemCallFilter"][-1]):
        fail(f"the last SystemCallFilter= line does not allow {call}: {filters}")
caps = set(settings["AmbientCapabilities"][0].split())
if not {"CAP_BPF", "CAP_PERFMON"} <= caps or "CAP_SYS_ADMIN" in caps:
    fail(f"unexpected capability set {caps}")
if "ProtectProc" in settings and "invisible" in settings["ProtectProc"]:
    fail("ProtectProc=invisible hides the processes to profile")
# The daemon writes its last profile at SIGTERM and ignores SIGHUP (it reads its configuration at
# start): a KillSignal= other than SIGTERM would lose the last interval, an ExecReload= would promise
# a reload that does not happen.
if settings.get("KillSignal", ["SIGTERM"]) != ["SIGTERM"] or "ExecReload" in settings:
    fail(f"KillSignal={settings.get('KillSignal')} ExecReload={settings.get('ExecReload')}: "
         "the daemon stops on SIGTERM and does not reload")

# The hint the daemon prints without privileges names the same capabilities the unit grants.
if os.geteuid() == 0 and shutil.which("setpriv"):
    p = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--inh-caps=-all",
                        os.environ["OTELPROFD"], "--duration", "1s"], capture_output=True, text=True, timeout=60)
    m = re.search(r"\(setcap (\S+)\+ep otelprofd\)", p.stderr)
    print(p.stderr.strip())
    if p.returncode != 2 or not m:
        fail(f"no setcap hint without privileges (exit {p.returncode})")
    hinted = {c.upper() for c in m.group(1).split(",")}
    # A binary given capabilities with setcap has no LimitMEMLOCK=: on kernels before 5.11 it
    # raises the memlock limit itself, with CAP_SYS_RESOURCE, which the unit does not need.
    hinted.discard("CAP_SYS_RESOURCE")
    if hinted != caps:
        fail(f"the setcap hint grants {sorted(hinted)}, the unit {sorted(caps)}")
else:
    print("not root or no setpriv: the setcap hint is not checked")
print("PASS")
