#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Debian package's unit under a real systemd. Boots a Debian 12 root (make-root.sh:
debootstrap from the mirror apt uses here, cached under /var/tmp/otelprofd-nspawn/ and keyed on the
recipe, the package's dependencies and the mirror) with `systemd-nspawn --boot` (a volatile overlay:
the cached root is never written), the capabilities and system calls the unit needs passed
through, and the host's network (the test collector listens on the host's 127.0.0.1). Inside,
through nsenter into the container's PID 1 (--register=no leaves no machine for systemctl -M):
- dpkg -i of the package built from this tree (tests/ops/debpkg.py), configured to send to the
  collector (at 99 Hz, not the service's 19, so that a loaded machine gives samples soon); a
  workload started as a service, and a busy process on the host, which must never arrive;
- the unit starts (Type=notify) and runs as its dynamic user, with exactly the kept capabilities
  in every thread and the unit's bounding set, its one child the JVM attach broker with CAP_SETUID,
  CAP_SETGID and CAP_SYS_PTRACE only, under its hardening (no new privileges, the system
  call filter, PrivateTmp, PrivateMounts, ProtectProc=ptraceable, ProtectSystem=strict,
  ProtectHome, PrivateDevices); resource control where the container's cgroups allow it;
- the workload arrives at the collector symbolized under its pid in the container;
- the watchdog is fed (WatchdogSec shortened to 3 s by a drop-in: its timestamp moves, and the
  service outlives several periods);
- `systemctl reload` is refused (no ExecReload) and SIGHUP is logged and ignored, the same process
  running on;
- `journalctl -p warning` shows the daemon's warning (an OTEL_RESOURCE_ATTRIBUTES entry it skips: a
  value that decodes to a NUL byte) and none of its information lines;
- `systemctl stop` ends it cleanly (SIGTERM, exit 0, Result=success), with no error in its journal
  and no complaint of systemd about the unit.
nspawn's options: --register=no and --keep-unit because the host has no systemd to register a
machine with or make a scope for (without --keep-unit: "Failed to open system bus");
--volatile=overlay keeps the cached root read-only under a tmpfs; --console=pipe because CI has no
terminal. Runs as root only; skips where BPF cannot load."""
import fcntl
import glob
import hashlib
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

import bpftest
import debpkg
import otlptest

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = "/var/tmp/otelprofd-nspawn"
# Beyond nspawn's default set: the unit's own, and CAP_SYS_RESOURCE, without which the container's
# systemd cannot raise the memlock limit to LimitMEMLOCK=infinity (it keeps the limit it inherits).
UNIT_CAPS = ["CAP_BPF", "CAP_PERFMON", "CAP_SYSLOG", "CAP_CHECKPOINT_RESTORE", "CAP_SYS_RESOURCE"]
CAP_NUMBERS = {"CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_DAC_READ_SEARCH": 2, "CAP_SYS_PTRACE": 19, "CAP_SYSLOG": 34, "CAP_PERFMON": 38, "CAP_BPF": 39,
               "CAP_CHECKPOINT_RESTORE": 40}
WATCHDOG_SEC = 3
START = time.time()


def step(what):
    print(f"[{time.time() - START:5.1f} s] {what}", flush=True)


def mirror():
    """The Debian mirror of apt's sources for bookworm (deb822 .sources or one-line .list files)."""
    texts = [open(f).read() for f in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*"))
             if os.path.isfile(f)]
    for text in texts:
        for block in re.split(r"\n\s*\n", text):
            uris = re.search(r"^URIs:\s*(\S+)", block, re.M)
            suites = re.search(r"^Suites:(.*)$", block, re.M)
            if uris and suites and "bookworm" in suites.group(1).split() and uris.group(1).rstrip("/").endswith("/debian"):
                return uris.group(1)
        for m in re.finditer(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s", text, re.M):
            if m.group(1).rstrip("/").endswith("/debian"):
                return m.group(1)
    return "http://deb.debian.org/debian"


def dependencies(deb):
    """Package names of the .deb's Depends (first of each alternative)."""
    field = subprocess.run(["dpkg-deb", "-f", deb, "Depends"], stdout=subprocess.PIPE, text=True, check=True).stdout
    return sorted({re.sub(r"\s*\(.*\)", "", d.split("|")[0]).strip().split(":")[0] for d in field.split(",")})


def root_for(deb):
    """The cached root for this recipe, made once (1 to 6 minutes, by the machine's load) under a lock."""
    recipe = os.path.join(HERE, "make-root.sh")
    packages = ",".join(dependencies(deb))
    url = mirror()
    key = hashlib.sha256(open(recipe, "rb").read() + f"\0{packages}\0{url}".encode()).hexdigest()[:16]
    os.makedirs(CACHE, exist_ok=True)
    lock = open(os.path.join(CACHE, "lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    root = os.path.join(CACHE, key)
    if os.path.exists(os.path.join(root, "sbin", "init")):
        step(f"reusing the root {root}")
        return root, lock
    for old in glob.glob(os.path.join(CACHE, "*")):
        if os.path.isdir(old):
            shutil.rmtree(old, ignore_errors=True)  # one recipe's root kept
    step(f"making the root {root} from {url} (debootstrap, cached for later runs)")
    debpkg.sh(["sh", recipe, root + ".new", url, packages])
    os.rename(root + ".new", root)
    step("root made")
    return root, lock


if os.geteuid() != 0:
    bpftest.skip("booting a container needs root")
bpftest.require_bpf()
for tool in ("systemd-nspawn", "debootstrap", "nsenter"):
    if not shutil.which(tool):
        bpftest.fail(f"{tool} is missing: run scripts/install-deps.sh")

out = bpftest.tmpdir()
# A copy: the cache keeps one tree's package, and another tree's test may replace it meanwhile.
deb_dir = os.path.join(out, "deb")
os.makedirs(deb_dir)
deb = shutil.copy2(debpkg.build(os.environ["SOURCE_ROOT"]), deb_dir)
step(f"package {deb}")
root, root_lock = root_for(deb)  # the lock is held to the end: the root is in use
collector = otlptest.Collector(os.path.join(out, "collector"))
metrics_port = bpftest.free_port()
console_log = os.path.join(out, "console.log")
nspawn_cmd = ["systemd-nspawn", "--boot", "--register=no", "--keep-unit", "--quiet", "-D", root,
              "--volatile=overlay", "--console=pipe", "--machine=otelprofd-test",
              "--capability=" + ",".join(UNIT_CAPS), "--system-call-filter=bpf perf_event_open",
              f"--bind-ro={deb_dir}:/mnt/otelprofd",
              f"--bind-ro={os.environ['SPLIT_WORKLOAD']}:/usr/local/bin/split"]
print("$", " ".join(nspawn_cmd), flush=True)
nspawn = subprocess.Popen(nspawn_cmd, stdin=subprocess.DEVNULL, stdout=open(console_log, "w"),
                          stderr=subprocess.STDOUT, start_new_session=True)
leader = None
failures = []
# A busy host process beside the container: its hot_x/hot_y must never arrive (the daemon in the
# container sees it through BPF, not in its /proc).
host_work = subprocess.Popen([os.environ["DEEP_WORKLOAD"], "300"], stdout=subprocess.DEVNULL)


def console():
    return open(console_log, errors="replace").read()[-3000:]


def run(*args, check=True, timeout=60, quiet=False):
    """A command inside the container (all of PID 1's namespaces)."""
    cmd = ["nsenter", "-t", str(leader), "-a", *args]
    if not quiet:
        print("#", " ".join(args), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                       env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "SYSTEMD_PAGER": "",
                            "SYSTEMD_COLORS": "0"})
    if not quiet and p.stdout.strip():
        print(p.stdout.rstrip()[-3000:])
    if check and p.returncode != 0:
        bpftest.fail(f"{' '.join(args)} exited {p.returncode} in the container")
    return p


def show(unit, *props):
    text = run("systemctl", "show", unit, "-p", ",".join(props), quiet=True).stdout
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def poll(what, condition, timeout=60, every=0.5):
    deadline = time.time() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.time() > deadline:
            bpftest.fail(f"{what}: not within {timeout} s")
        time.sleep(every)


def find_leader():
    """The container's PID 1, as the host sees it: nspawn's child in another PID namespace."""
    if nspawn.poll() is not None:
        bpftest.fail(f"systemd-nspawn exited {nspawn.returncode} before the container booted:\n{console()}")
    mine = os.readlink("/proc/self/ns/pid")
    try:
        children = open(f"/proc/{nspawn.pid}/task/{nspawn.pid}/children").read().split()
    except FileNotFoundError:
        return None
    for child in children:
        try:
            if os.readlink(f"/proc/{child}/ns/pid") != mine:
                return int(child)
        except FileNotFoundError:
            continue
    return None


def kept_mask():
    """The capabilities the daemon keeps, as privileges.h documents them."""
    header = open(os.path.join(os.environ["SOURCE_ROOT"], "daemon", "sampling", "privileges.h")).read()
    return sum(1 << CAP_NUMBERS[c] for c in re.findall(r"^ \*   (CAP_[A-Z_]+)\s", header, re.M))


try:
    leader = poll("the container's PID 1", find_leader, timeout=30, every=0.1)
    step(f"container PID 1 is host pid {leader}")
    # Until systemd runs and listens, systemctl says offline or cannot connect; then --wait waits
    # for the boot to end.
    def booted():
        state = run("systemctl", "is-system-running", "--wait", check=False, timeout=120, quiet=True).stdout.strip()
        return state if state in ("running", "degraded", "maintenance", "stopping") else None

    state = poll("systemd's answer", booted, timeout=120)
    step(f"systemd in the container: {state}")
    if state not in ("running", "degraded"):
        run("systemctl", "--failed", "--no-legend", check=False)
        bpftest.fail(f"the container's systemd is {state}")
    if state == "degraded":
        run("systemctl", "--failed", "--no-legend", check=False)

    run("dpkg", "-i", "/mnt/otelprofd/" + os.path.basename(deb))
    if run("systemctl", "is-enabled", "otelprofd", check=False).stdout.strip() != "disabled":
        failures.append("the package enabled the service (it ships disabled: no endpoint is set)")
    run("sh", "-c", f"printf 'endpoint = 127.0.0.1:{collector.grpc_port}\\ninsecure = yes\\nexport-interval = 2s\\nfrequency = 99\\n"
                    f"metrics-address = 127.0.0.1:{metrics_port}\\n' >> /etc/otelprofd/otelprofd.conf && "
                    "mkdir -p /etc/systemd/system/otelprofd.service.d && "
                    f"printf '[Service]\\nWatchdogSec={WATCHDOG_SEC}s\\n"
                    "Environment=OTEL_RESOURCE_ATTRIBUTES=deployment.environment=nspawn,nul=%%%%00\\n' "
                    "> /etc/systemd/system/otelprofd.service.d/test.conf && systemctl daemon-reload")
    run("systemd-run", "--unit=split-workload", "--property=Type=exec", "/usr/local/bin/split", "120")
    workload_pid = int(show("split-workload", "MainPID")["MainPID"])

    step("systemctl start otelprofd")
    p = run("systemctl", "start", "otelprofd", check=False, timeout=120)
    props = show("otelprofd", "ActiveState", "SubState", "MainPID", "User", "UID", "NRestarts", "Result")
    print(props)
    if p.returncode != 0 or props["ActiveState"] != "active":
        run("journalctl", "-u", "otelprofd", "--no-pager", "-n", "40", check=False)
        bpftest.fail(f"otelprofd did not start: {props}")
    pid = int(props["MainPID"])
    step(f"otelprofd active, MainPID {pid} in the container, workload pid {workload_pid}")

    # Its user and its capabilities, in every thread.
    status = run("cat", f"/proc/{pid}/status", quiet=True).stdout
    uids = re.search(r"^Uid:\s+(\d+)\s+(\d+)", status, re.M).groups()
    print(f"User={props['User']} UID={props['UID']}, process Uid {uids}")
    if props["User"] != "otelprofd" or uids[0] == "0" or uids[0] != props["UID"] or uids[1] != uids[0]:
        failures.append(f"the service does not run as its dynamic user otelprofd: User={props['User']} "
                        f"UID={props['UID']} Uid={uids}")
    kept = kept_mask()
    bounding = int(re.search(r"^CapBnd:\s+(\S+)", status, re.M).group(1), 16)
    if bounding != sum(1 << CAP_NUMBERS[c] for c in CAP_NUMBERS):
        failures.append(f"CapBnd {bounding:#x} is not the unit's CapabilityBoundingSet")
    for tid in run("ls", f"/proc/{pid}/task", quiet=True).stdout.split():
        t = run("cat", f"/proc/{pid}/task/{tid}/status", check=False, quiet=True).stdout
        if not t:
            continue
        loader = re.search(r"^Name:\s+bpf-loader$", t, re.M)  # keeps BPF and PERFMON while a part waits
        writer = re.search(r"^Name:\s+log-writer$", t, re.M)  # drops them all: it only writes to stderr
        for field in ("CapEff", "CapPrm"):
            m = re.search(rf"^{field}:\s+(\S+)", t, re.M)
            if not m:  # a thread ending as it was read (the bpf-loader's, a kallsyms read's)
                continue
            value = int(m.group(1), 16)
            if loader and value == kept | (1 << CAP_NUMBERS["CAP_BPF"]) | (1 << CAP_NUMBERS["CAP_PERFMON"]):
                continue
            if writer and value == 0:
                continue
            if value != kept:
                failures.append(f"thread {tid} has {field} {value:#x}, the kept set is {kept:#x}")
    # The JVM attach broker, its one child: CAP_SETUID, CAP_SETGID and CAP_SYS_PTRACE, nothing else.
    broker_caps = sum(1 << CAP_NUMBERS[c] for c in ("CAP_SETGID", "CAP_SETUID", "CAP_SYS_PTRACE"))
    children = run("cat", f"/proc/{pid}/task/{pid}/children", quiet=True).stdout.split()
    found = []
    for child in children:
        found.append(bpftest.name_and_caps(run("cat", f"/proc/{child}/status", check=False, quiet=True).stdout))
    print(f"the daemon's children: {found}")
    if found != [("otelprofd-jvm", broker_caps, broker_caps)]:
        failures.append(f"the daemon's children are {found}, not the JVM attach broker with {broker_caps:#x}")
    # Its hardening, as the kernel shows it.
    limits = run("cat", f"/proc/{pid}/limits", quiet=True).stdout
    memlock = re.search(r"^Max locked memory\s+(\S+)\s+(\S+)", limits, re.M).groups()
    print(f"Max locked memory: {memlock}")
    want = ("unlimited", "unlimited")
    if not int(re.search(r"^CapBnd:\s+(\S+)", open("/proc/self/status").read(), re.M).group(1), 16) & (1 << 24):
        # No CAP_SYS_RESOURCE in this machine's bounding set (a sandbox): nothing under it, the
        # container's systemd included, can raise the hard limit it inherits.
        hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
        hard = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
        print(f"LimitMEMLOCK=infinity cannot be applied here: no CAP_SYS_RESOURCE on this machine, "
              f"whose memlock hard limit is {hard}")
        want = (hard, hard)
    if memlock != want:
        failures.append(f"LimitMEMLOCK=infinity: the service's memlock limit is {memlock}, expected {want}")
    for field, want in (("NoNewPrivs", "1"), ("Seccomp", "2")):
        got = re.search(rf"^{field}:\s+(\S+)", status, re.M).group(1)
        print(f"{field}: {got}")
        if got != want:
            failures.append(f"{field} is {got}, not {want}")
    if run("readlink", f"/proc/{pid}/ns/mnt", quiet=True).stdout == run("readlink", "/proc/1/ns/mnt", quiet=True).stdout:
        failures.append("PrivateMounts: the service shares PID 1's mount namespace")
    mounts = {}
    for line in run("cat", f"/proc/{pid}/mountinfo", quiet=True).stdout.splitlines():
        fields = line.split()
        sep = fields.index("-")
        mounts[fields[4]] = (fields[5], fields[sep + 1], fields[sep + 3] if len(fields) > sep + 3 else "")
    for point in ("/", "/tmp", "/var/tmp", "/proc", "/home", "/usr"):
        print(f"mount {point}: {mounts.get(point)}")
    if "/tmp" not in mounts or run("stat", "-c", "%d:%i", f"/proc/{pid}/root/tmp", quiet=True).stdout == \
            run("stat", "-c", "%d:%i", "/tmp", quiet=True).stdout:
        failures.append("PrivateTmp: the service's /tmp is the container's")
    if "hidepid=ptraceable" not in mounts.get("/proc", ("", "", ""))[2] and \
            "hidepid=4" not in mounts.get("/proc", ("", "", ""))[2]:
        failures.append(f"ProtectProc=ptraceable: /proc is {mounts.get('/proc')}")
    if not mounts.get("/", ("",))[0].startswith("ro") and not mounts.get("/usr", ("",))[0].startswith("ro"):
        failures.append(f"ProtectSystem=strict: / is {mounts.get('/')}")
    if "/home" not in mounts:
        failures.append("ProtectHome: /home is the container's")
    own_dev = run("ls", f"/proc/{pid}/root/dev", quiet=True).stdout.split()
    if "console" in own_dev or "null" not in own_dev:
        failures.append(f"PrivateDevices: the service's /dev is {own_dev}")
    # Resource control (MemoryMax=, CPUWeight=, TasksMax=, DevicePolicy=) needs cgroup controllers
    # the container's systemd can write: with cgroup v2 controllers on the host, they are delegated;
    # on a host whose controllers are on cgroup v1 (the hybrid hierarchy), nspawn mounts them
    # read-only in the container and the cgroup2 tree has no controller to give.
    memory = show("otelprofd", "MemoryCurrent", "MemoryMax", "ControlGroup")
    controllers = run("sh", "-c", "cat /sys/fs/cgroup/cgroup.controllers /sys/fs/cgroup/unified/cgroup.controllers "
                      "2>/dev/null", check=False, quiet=True).stdout.split()
    if "memory" in controllers:
        limit = run("sh", "-c", f"cat /sys/fs/cgroup{memory['ControlGroup']}/memory.max "
                    f"/sys/fs/cgroup/unified{memory['ControlGroup']}/memory.max 2>/dev/null", check=False,
                    quiet=True).stdout.split()
        print(f"memory controller delegated: memory.max {limit}, {memory}")
        if memory["MemoryMax"] not in limit:
            failures.append(f"MemoryMax={memory['MemoryMax']} is not the cgroup's memory.max {limit}")
    else:
        print(f"resource control not checked: the container's cgroup2 tree has no controllers ({controllers}); "
              f"the host's are on cgroup v1, mounted read-only in the container ({memory})")

    # Profiles: the container's workload, under its pid in the container, symbolized.
    def workload_arrived():
        summaries = otlptest.dump(os.path.join(collector.out_dir, "*-grpc.pb"))
        samples = otlptest.samples_of(summaries, workload_pid)
        hot = sum(s["count"] for s in samples if s["stack"] and s["stack"][0].startswith("hot_"))
        return (hot, summaries) if hot >= 50 else None

    hot, summaries = poll("the workload's samples at the collector", workload_arrived, timeout=60, every=2)
    for summary in summaries:
        for r in summary.get("resources", []):
            a = r["attributes"]
            leaves = {s["stack"][0] for scope in r["scopes"] for prof in scope["profiles"]
                      for s in prof["sample_list"] if s["stack"]}
            if leaves & {"hot_x", "hot_y"}:
                failures.append(f"the host's busy process arrived from the container as {a}")
            if a.get("process.pid") == workload_pid:
                print(f"workload resource: {a}")
                if a.get("process.executable.name") != "split":
                    failures.append(f"the workload (pid {workload_pid} in the container) arrived as {a}")
                if a.get("deployment.environment") != "nspawn":
                    failures.append(f"OTEL_RESOURCE_ATTRIBUTES of the unit's drop-in not applied: {a}")
    step(f"{hot} samples of the workload's hot functions arrived")

    # The watchdog: fed (its timestamp moves) and the service outlives several periods.
    first = show("otelprofd", "WatchdogTimestampMonotonic", "WatchdogUSec")
    print(first)
    if first.get("WatchdogUSec") not in (f"{WATCHDOG_SEC}s", str(WATCHDOG_SEC * 1000000)):
        failures.append(f"the drop-in's WatchdogSec={WATCHDOG_SEC}s is not in effect: {first}")
    poll("the watchdog's timestamp to move",
         lambda: int(show("otelprofd", "WatchdogTimestampMonotonic")["WatchdogTimestampMonotonic"]) >
         int(first["WatchdogTimestampMonotonic"]) > 0, timeout=3 * WATCHDOG_SEC)
    time.sleep(3 * WATCHDOG_SEC)
    later = show("otelprofd", "ActiveState", "MainPID", "NRestarts")
    print(later)
    if later != {"ActiveState": "active", "MainPID": str(pid), "NRestarts": "0"}:
        failures.append(f"after {3 * WATCHDOG_SEC} s more (WatchdogSec={WATCHDOG_SEC}s): {later}")
    step("watchdog fed")

    # reload: refused (no ExecReload=); SIGHUP: logged and ignored.
    p = run("systemctl", "reload", "otelprofd", check=False)
    if p.returncode == 0 or "not applicable" not in p.stdout:
        failures.append(f"systemctl reload did not say the unit cannot reload (exit {p.returncode})")
    run("systemctl", "kill", "--kill-who=main", "--signal=SIGHUP", "otelprofd")
    poll("the SIGHUP log line", lambda: "Received SIGHUP: ignored" in run(
        "journalctl", "-u", "otelprofd", "-o", "cat", "--no-pager", check=False, quiet=True).stdout, timeout=20)
    after = show("otelprofd", "ActiveState", "MainPID")
    if after != {"ActiveState": "active", "MainPID": str(pid)}:
        failures.append(f"after reload and SIGHUP: {after}")
    step("reload refused, SIGHUP ignored")

    # journalctl -p warning: the daemon's warning, at its priority, and no information line.
    warnings = run("journalctl", "-u", "otelprofd", "-p", "warning", "-o", "cat", "--no-pager").stdout
    if "malformed" not in warnings:
        failures.append("journalctl -p warning does not show the malformed OTEL_RESOURCE_ATTRIBUTES warning")
    if "Profiling every process" in warnings or "Received SIGHUP" in warnings:
        failures.append("journalctl -p warning shows information lines: priorities are lost")

    step("systemctl stop otelprofd")
    t0 = time.time()
    run("systemctl", "stop", "otelprofd", timeout=90)
    stopped = show("otelprofd", "ActiveState", "Result", "ExecMainCode", "ExecMainStatus")
    print(f"stopped in {time.time() - t0:.1f} s: {stopped}")
    if stopped.get("ActiveState") != "inactive" or stopped.get("Result") != "success" or \
            stopped.get("ExecMainStatus") != "0":
        failures.append(f"systemctl stop: {stopped}")
    journal = run("journalctl", "-u", "otelprofd", "-o", "cat", "--no-pager").stdout
    if "Received SIGTERM" not in journal:
        failures.append("the daemon's journal has no SIGTERM line")
    errors = run("journalctl", "-u", "otelprofd", "-p", "err", "-o", "cat", "--no-pager", check=False).stdout
    if errors.strip() and "-- No entries --" not in errors:
        failures.append(f"errors in the service's journal: {errors.strip()[:500]}")
    # systemd's own word on the unit: a setting it could not apply is logged by PID 1.
    pid1 = run("journalctl", "_PID=1", "-o", "cat", "--no-pager", check=False, quiet=True).stdout
    complaints = [line for line in pid1.splitlines() if "otelprofd" in line and
                  re.search(r"ignor|[Ff]ailed|[Uu]nsupported|not supported", line)]
    if complaints:
        failures.append(f"systemd's complaints about the unit: {complaints[:5]}")
finally:
    if leader:
        run("systemctl", "poweroff", check=False, quiet=True)
    try:
        nspawn.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(nspawn.pid, signal.SIGKILL)
        if leader:
            try:
                os.kill(leader, signal.SIGKILL)  # the container's PID 1: its whole PID namespace ends
            except ProcessLookupError:
                pass
        nspawn.wait()
    print("console:", console()[-1500:])
    host_work.kill()
    host_work.wait()
    shutil.rmtree(deb_dir, ignore_errors=True)
    stats = collector.stop()
step("container stopped")
if stats["invalid"]:
    failures.append(f"{stats['invalid']} invalid requests at the collector: {stats['last_error']}")
if failures:
    bpftest.fail("; ".join(failures))
print("PASS")
sys.exit(0)
