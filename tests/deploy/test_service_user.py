#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Install the daemon (meson install into a scratch DESTDIR) and start the installed binary the way
the systemd unit does where systemd is not PID 1: the unit's ExecStart line (its --config of the
installed configuration file), its Environment= lines, its LimitMEMLOCK= (prlimit), as an
unprivileged user with exactly the unit's ambient capabilities and no new privileges (setpriv), in
a mount namespace with the unit's ProtectHome= (tmpfs on /home, /root) and ProtectProc=ptraceable
(/proc mounted with hidepid=4) (unshare).
Added to the unit's command line: an endpoint (the test collector on 127.0.0.1), --metrics-address
and a short --export-interval. Checks: /ready answers 200; every thread of the daemon (exporter,
gRPC, metrics server...) holds exactly the capabilities privileges.h documents as kept, but the
thread "bpf-loader" (unless OTELPROFD_RUNTIMES_AT_START=1), which keeps CAP_BPF and CAP_PERFMON besides
while a runtime's BPF part waits for its first process (daemon/sampling/runtime_bpf.h); a process
of another user arrives at the collector, symbolized; the JVM attach broker, the daemon's one child,
holds CAP_SETUID, CAP_SETGID and CAP_SYS_PTRACE only."""
import os
import pwd
import re
import resource
import shlex
import signal
import subprocess
import time
import urllib.error
import urllib.request

import bpftest
import otlptest

bpftest.require_bpf()
unit = open(os.environ["SYSTEMD_UNIT"]).read()


def unit_values(key):
    return [m.group(1).strip() for m in re.finditer(rf"^{key}=(.*)$", unit, re.M)]


caps = unit_values("AmbientCapabilities")[0].split()
CAP_NUMBERS = {"CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_DAC_READ_SEARCH": 2, "CAP_SYS_PTRACE": 19, "CAP_SYS_RESOURCE": 24, "CAP_SYSLOG": 34,
               "CAP_PERFMON": 38, "CAP_BPF": 39, "CAP_CHECKPOINT_RESTORE": 40}
# The kept set as privileges.h documents it ("CAP_X  why" lines of its comment).
header = open(os.path.join(os.environ["SOURCE_ROOT"], "daemon", "sampling", "privileges.h")).read()
documented = re.findall(r"^ \*   (CAP_[A-Z_]+)\s", header, re.M)
if not documented or any(c not in caps for c in documented):
    bpftest.fail(f"privileges.h documents kept capabilities {documented}, the unit grants {caps}")
# Grant what this machine can: a sandbox may lack some capabilities in its own bounding set.
bounding = int(re.search(r"^CapBnd:\s+(\S+)", open("/proc/self/status").read(), re.M).group(1), 16)
unavailable = [c for c in caps if not bounding & (1 << CAP_NUMBERS[c])]
if unavailable:
    print(f"not grantable on this machine, left out: {unavailable}")
capnames = ",".join("+" + c[len("CAP_"):].lower() for c in caps if c not in unavailable)
kept = sum(1 << CAP_NUMBERS[c] for c in documented if c not in unavailable)
# The runtimes' BPF parts' loader thread keeps these too while a part waits (runtime_bpf.h).
loading = sum(1 << CAP_NUMBERS[c] for c in ("CAP_BPF", "CAP_PERFMON") if c not in unavailable)

dest = bpftest.tmpdir()
os.chmod(dest, 0o755)
subprocess.run(["meson", "install", "-C", os.environ["BUILD_ROOT"], "--destdir", dest, "--no-rebuild", "--quiet"],
               check=True, stdout=subprocess.DEVNULL)
for d, _, _ in os.walk(dest):
    os.chmod(d, 0o755)


def installed(path):
    """An absolute path of the unit inside DESTDIR."""
    return dest + path if path.startswith("/") and os.path.exists(dest + path) else path


user = "otelprofd-test"
try:
    pwd.getpwnam(user)
except KeyError:
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user], check=True)
pw = pwd.getpwnam(user)

# systemd's specifiers the unit uses: %C is the cache root (CacheDirectory=otelprofd lives in it).
cache_root = bpftest.tmpdir()
os.chmod(cache_root, 0o755)
os.makedirs(os.path.join(cache_root, "otelprofd"))
os.chown(os.path.join(cache_root, "otelprofd"), pw.pw_uid, pw.pw_gid)
env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
for line in unit_values("Environment"):
    for assignment in shlex.split(line):
        key, _, value = assignment.partition("=")
        env[key] = value.replace("%C", cache_root)
if any("%" in v for v in env.values()):
    bpftest.fail(f"a specifier of the unit's Environment= this test does not know: {env}")
memlock = unit_values("LimitMEMLOCK")[0]
memlock = "unlimited" if memlock == "infinity" else memlock
if not re.fullmatch(r"unlimited|\d+", memlock):
    bpftest.fail(f"LimitMEMLOCK={memlock}: this test knows infinity and plain bytes")
if not bounding & (1 << CAP_NUMBERS["CAP_SYS_RESOURCE"]):
    # Without it prlimit cannot raise the hard limit: the closest this machine allows is its own.
    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    hard = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
    if hard != memlock:
        print(f"LimitMEMLOCK={memlock} not settable without CAP_SYS_RESOURCE, using {hard}")
        memlock = hard
exec_start = [installed(a) for a in shlex.split(unit_values("ExecStart")[0])]
if not os.path.exists(exec_start[0]) or "--config" not in exec_start or \
        not os.path.exists(exec_start[exec_start.index("--config") + 1]):
    bpftest.fail(f"ExecStart does not run the installed binary with the installed configuration: {exec_start}")

out = bpftest.tmpdir()
collector = otlptest.Collector(os.path.join(out, "collector"))
metrics_port = otlptest.free_port()
log_path = os.path.join(out, "otelprofd.log")
workload = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                             os.environ["SPLIT_WORKLOAD"], "60"])
daemon = None
try:
    # The unit's ProtectHome=yes and ProtectProc=ptraceable, in a mount namespace of the daemon's own
    # (not PrivateTmp=: the installed files live under /tmp here).
    sandbox = []
    if unit_values("ProtectHome") == ["yes"]:
        sandbox.append("mount -t tmpfs -o mode=0755 tmpfs /home && mount -t tmpfs -o mode=0700 tmpfs /root")
    if unit_values("ProtectProc") == ["ptraceable"]:
        sandbox.append("mount -t proc -o hidepid=4 proc /proc")
    cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", " && ".join(sandbox + ['exec "$@"']),
           "sh"] if sandbox else []
    cmd += ["prlimit", f"--memlock={memlock}:{memlock}",
           "setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups",
           f"--inh-caps=-all,{capnames}", f"--ambient-caps=-all,{capnames}", f"--bounding-set=-all,{capnames}",
           "--no-new-privs", *exec_start,
           "--endpoint", f"127.0.0.1:{collector.grpc_port}", "--insecure",
           "--metrics-address", f"127.0.0.1:{metrics_port}", "--export-interval", "2s"]
    print("$", " ".join(f"{k}={v}" for k, v in env.items()), " ".join(cmd), flush=True)
    with open(log_path, "w") as log:
        daemon = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    workload_cpu = bpftest.process_cpu_seconds(workload.pid)

    # Ready once it samples and its first export was delivered.
    deadline = time.time() + 60
    while True:
        if daemon.poll() is not None:
            bpftest.fail(f"otelprofd exited {daemon.returncode}:\n" + open(log_path).read())
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/ready", timeout=5) as r:
                print("/ready:", r.status, r.read().decode().strip())
                break
        except (urllib.error.URLError, ConnectionError) as e:
            if time.time() > deadline:
                bpftest.fail(f"/ready never answered 200 (last: {e}):\n" + open(log_path).read())
        time.sleep(0.5)

    def check_threads(when):
        """Capabilities are per thread: every thread must hold exactly the kept set (the log writer none)."""
        tasks = os.listdir(f"/proc/{daemon.pid}/task")
        for tid in tasks:
            try:
                status = open(f"/proc/{daemon.pid}/task/{tid}/status").read()
            except FileNotFoundError:
                continue
            name = re.search(r"^Name:\s+(.*)$", status, re.M).group(1)
            for field in ("CapEff", "CapPrm"):
                value = int(re.search(rf"^{field}:\s+(\S+)", status, re.M).group(1), 16)
                if name == "bpf-loader" and value == kept | loading:
                    continue
                if name == "log-writer" and value == 0:  # drops them all first: it only writes to stderr
                    continue
                if value != kept:
                    bpftest.fail(f"{when}: thread {tid} ({name}) has {field} {value:#x}, the kept set is {kept:#x} "
                                 f"({', '.join(documented)})")
        print(f"{when}: {len(tasks)} threads, each with CapEff = CapPrm = {kept:#x} (bpf-loader: at most {kept | loading:#x})")
        return len(tasks)

    def check_broker():
        """The JVM attach broker, the daemon's one child: CAP_SETUID, CAP_SETGID, CAP_SYS_PTRACE only."""
        want = sum(1 << CAP_NUMBERS[c] for c in ("CAP_SETGID", "CAP_SETUID", "CAP_SYS_PTRACE") if c not in unavailable)
        children = open(f"/proc/{daemon.pid}/task/{daemon.pid}/children").read().split()
        found = []
        for child in children:
            found.append(bpftest.name_and_caps(open(f"/proc/{child}/status").read()))
        print(f"the daemon's children: {found}")
        if found != [("otelprofd-jvm", want, want)]:
            bpftest.fail(f"the daemon's children are {found}, not the JVM attach broker with {want:#x}")

    check_broker()
    if check_threads("ready") < 2:
        bpftest.fail("otelprofd runs one thread in export mode: the threads this test checks are missing")
    time.sleep(6)
    check_threads("after 6 s more")
    workload_cpu = bpftest.process_cpu_seconds(workload.pid) - workload_cpu
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=60)
    print(open(log_path).read()[-3000:])
    if daemon.returncode != 0:
        bpftest.fail(f"otelprofd as {user} exited {daemon.returncode} on SIGTERM")
finally:
    if daemon and daemon.poll() is None:
        daemon.kill()
        daemon.wait()
    workload.kill()
    workload.wait()
stats = collector.stop()
if stats["invalid"]:
    bpftest.fail(f"{stats['invalid']} invalid requests: {stats['last_error']}")

samples = otlptest.samples_of(otlptest.dump(os.path.join(collector.out_dir, "*-grpc.pb")), workload.pid)
total = sum(s["count"] for s in samples)
hot = sum(s["count"] for s in samples if s["stack"] and s["stack"][0].startswith("hot_"))
print(f"{total} samples of the other user's process, {hot} in its hot functions; it had {workload_cpu:.2f} s of CPU "
      "while the daemon ran")
# 50 at least, or, on a host so loaded that the workload had less than 5 s of CPU, half of what the
# service's 19 Hz takes of it.
if hot < bpftest.least_samples(50, 19, workload_cpu):
    bpftest.fail("the other user's process was not profiled and symbolized")
print("PASS")
