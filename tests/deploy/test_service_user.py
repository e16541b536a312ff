#!/usr/bin/env python3
"""Install the daemon (meson install into a scratch DESTDIR) and run the installed binary the way the
systemd unit does where systemd is not PID 1: as an unprivileged user with exactly the unit's
ambient capabilities and no new privileges (setpriv). It must profile a process owned by another
user (symbolized) and, after setup, hold only the capabilities it keeps."""
import os
import pwd
import re
import subprocess
import sys
import time

import bpftest

bpftest.require_bpf()
unit = open(os.environ["SYSTEMD_UNIT"]).read()
caps = re.search(r"^AmbientCapabilities=(.*)$", unit, re.M).group(1).split()
# Grant what this machine can: a sandbox may lack some capabilities in its own bounding set.
CAP_NUMBERS = {"CAP_DAC_READ_SEARCH": 2, "CAP_SYS_PTRACE": 19, "CAP_SYS_RESOURCE": 24, "CAP_SYSLOG": 34,
               "CAP_PERFMON": 38, "CAP_BPF": 39, "CAP_CHECKPOINT_RESTORE": 40}
bounding = int(re.search(r"^CapBnd:\s+(\S+)", open("/proc/self/status").read(), re.M).group(1), 16)
unavailable = [c for c in caps if not bounding & (1 << CAP_NUMBERS[c])]
if unavailable:
    print(f"not grantable on this machine, left out: {unavailable}")
capnames = ",".join("+" + c[len("CAP_"):].lower() for c in caps if c not in unavailable)

dest = bpftest.tmpdir()
os.chmod(dest, 0o755)
subprocess.run(["meson", "install", "-C", os.environ["BUILD_ROOT"], "--destdir", dest, "--no-rebuild", "--quiet"],
               check=True, stdout=subprocess.DEVNULL)
installed = next(os.path.join(d, f) for d, _, files in os.walk(dest) for f in files if f == "otelprofd")
for d in (os.path.dirname(installed),):
    while d.startswith(dest):
        os.chmod(d, 0o755)
        d = os.path.dirname(d)
print(f"installed binary: {installed}")

user = "otelprofd-test"
try:
    pwd.getpwnam(user)
except KeyError:
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user], check=True)
pw = pwd.getpwnam(user)

out = bpftest.tmpdir()
os.chmod(out, 0o777)
folded = os.path.join(out, "other-user.folded")
workload = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                             os.environ["SPLIT_WORKLOAD"], "20"])
try:
    cmd = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups",
           f"--inh-caps=-all,{capnames}", f"--ambient-caps=-all,{capnames}", f"--bounding-set=-all,{capnames}",
           "--no-new-privs", installed, "--pid", str(workload.pid), "--frequency", "199",
           "--duration", "3s", "-o", folded]
    print("$", " ".join(cmd), flush=True)
    daemon = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Capabilities are dropped once sampling is set up: read them after the daemon says it samples.
    output = ""
    while "Profiling" not in output:
        line = daemon.stdout.readline()
        if not line:
            bpftest.fail("otelprofd exited before sampling:\n" + output)
        output += line
    status = open(f"/proc/{daemon.pid}/status").read()
    eff = int(re.search(r"^CapEff:\s+(\S+)", status, re.M).group(1), 16)
    rest, _ = daemon.communicate(timeout=60)
    output += rest
    print(output)
    if daemon.returncode != 0:
        bpftest.fail(f"otelprofd as {user} exited {daemon.returncode}")
finally:
    workload.kill()
    workload.wait()

# CAP_SYS_PTRACE 19, CAP_DAC_READ_SEARCH 2, CAP_SYSLOG 34, CAP_CHECKPOINT_RESTORE 40
kept = (1 << 19) | (1 << 2) | (1 << 34) | (1 << 40)
print(f"CapEff after setup: {eff:#x}")
if eff & ~kept:
    bpftest.fail(f"capabilities beyond the kept ones after setup: {eff & ~kept:#x}")
if eff & ((1 << 39) | (1 << 38)):
    bpftest.fail("CAP_BPF or CAP_PERFMON still effective after setup")

stacks = bpftest.read_folded(folded)
hot = sum(n for s, n in stacks.items() if s[-1].startswith("hot_"))
print(f"{sum(stacks.values())} samples, {hot} in the other user's hot functions")
if hot < 100:
    bpftest.fail("the other user's process was not profiled and symbolized")
print("PASS")
