# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the integration tests that load otelprofd's real BPF programs.

A test skips (exit 77) only where this machine cannot load BPF at all, and says why; everywhere
else a failure to load is a failure.
"""
import ctypes
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def fail(reason):
    print(f"FAIL: {reason}")
    sys.exit(1)


def _can_load_bpf():
    """Load a two-instruction socket filter through bpf(2): proves the kernel and our privileges allow BPF."""
    libc = ctypes.CDLL(None, use_errno=True)
    # r0 = 0; exit
    insns = (ctypes.c_uint64 * 2)(0x00000000000000B7, 0x0000000000000095)
    license_ = ctypes.create_string_buffer(b"GPL")

    class Attr(ctypes.Structure):
        _fields_ = [("prog_type", ctypes.c_uint32), ("insn_cnt", ctypes.c_uint32),
                    ("insns", ctypes.c_uint64), ("license", ctypes.c_uint64),
                    ("pad", ctypes.c_uint8 * 128)]

    attr = Attr(1, 2, ctypes.addressof(insns), ctypes.addressof(license_))
    SYS_bpf = {"x86_64": 321, "aarch64": 280}.get(os.uname().machine)
    if SYS_bpf is None:
        return True, ""
    fd = libc.syscall(SYS_bpf, 5, ctypes.byref(attr), ctypes.sizeof(attr))  # BPF_PROG_LOAD
    if fd < 0:
        return False, os.strerror(ctypes.get_errno())
    os.close(fd)
    return True, ""


def require_bpf():
    """Exit 77 with the reason when this machine cannot run BPF programs at all."""
    if os.geteuid() != 0:
        skip("BPF tests need root (or CAP_BPF and CAP_PERFMON); running as uid %d" % os.geteuid())
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        skip("the kernel has no BTF (/sys/kernel/btf/vmlinux), which CO-RE programs need")
    ok, why = _can_load_bpf()
    if not ok:
        skip("the kernel refuses even a trivial BPF program here: " + why)


def otelprofd():
    path = os.environ.get("OTELPROFD")
    if not path or not os.path.exists(path):
        fail("OTELPROFD is not set to the built binary")
    return path


def free_port(host="127.0.0.1"):
    """A TCP port free on host now (otelprofd refuses port 0 in --metrics-address)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def run(args, timeout=120, check=True):
    """Run a command, echo its output, and fail the test when it exits non-zero (unless check=False)."""
    print("$", " ".join(args), flush=True)
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    sys.stdout.write(p.stdout[-4000:])
    sys.stdout.write(p.stderr[-4000:])
    if check and p.returncode != 0:
        fail(f"{args[0]} exited {p.returncode}")
    return p


def wait_profiling(daemon, others=(), timeout=60):
    """Read otelprofd's stderr (a text pipe) until it says it profiles, and return what it said; when it
    does not, kill it and the processes in others, and fail."""
    log = ""
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = daemon.stderr.readline()
        log += line
        if "Profiling" in line or not line:
            break
    if "Profiling" not in log:
        for p in (daemon, *others):
            p.kill()
        fail("otelprofd did not start: " + log)
    return log


def drain(daemon):
    """Read the rest of daemon's stderr (a text pipe) on a thread, for a test that waits on something
    else meanwhile: a pipe nobody reads fills up (64 KiB; -v says much more while BPF parts load),
    and the daemon's next write to it blocks its loop. The function returned waits for the daemon to
    end (timeout seconds) and returns what it said."""
    said = []
    reader = threading.Thread(target=lambda: said.append(daemon.stderr.read()), daemon=True)
    reader.start()

    def rest(timeout=180):
        daemon.wait(timeout=timeout)
        reader.join(timeout)
        return "".join(said)
    return rest


def profile_loop(loop_body, out, name, args, env_extra):
    """Run otelprofd over a shell that runs loop_body again and again from once the daemon profiles
    (a process older than the daemon's mmap events has no history): otelprofd's args after
    `--pid SH --follow-children`, its environment plus env_extra. (path of its -o, its stderr)."""
    go = os.path.join(out, f"go-{name}")
    loop = subprocess.Popen(["/bin/sh", "-c", f"while [ ! -e {go} ]; do sleep 0.02; done; "
                             f"while :; do {loop_body}; done"], stdout=subprocess.DEVNULL)
    try:
        folded = os.path.join(out, f"{name}.folded")
        args = [otelprofd(), "--pid", str(loop.pid), "--follow-children", "-o", folded] + args
        print("$", " ".join(args), env_extra, flush=True)
        daemon = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=dict(os.environ, **env_extra))
        said = wait_profiling(daemon, (loop,))
        rest = drain(daemon)
        open(go, "w").close()
        said += rest(120)
        if daemon.returncode != 0:
            print(said[-4000:])
            fail(f"otelprofd exited {daemon.returncode}")
    finally:
        loop.kill()
        loop.wait()
    return folded, said


def process_cpu_seconds(pid):
    """The user and system CPU all of pid's threads have had so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        return sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13]) / os.sysconf("SC_CLK_TCK")


def least_samples(fixed, hz, cpu_seconds):
    """The samples a check wants: fixed, or on a host so loaded that the workload had less CPU than
    that assumes, half of what hz takes of the CPU it had."""
    return min(fixed, 0.5 * hz * cpu_seconds)


def name_and_caps(status):
    """(Name, CapEff, CapPrm) from the text of a /proc/PID/status."""
    def field(name):
        return re.search(rf"^{name}:\s+(.*)$", status, re.M).group(1).strip()
    return field("Name"), int(field("CapEff"), 16), int(field("CapPrm"), 16)


def read_folded(path):
    """{stack: count} from a folded file; a stack is a tuple (comm, root, ..., leaf)."""
    stacks = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            stacks[tuple(stack.split(";"))] = stacks.get(tuple(stack.split(";")), 0) + int(count)
    return stacks


def tmpdir():
    return tempfile.mkdtemp(prefix="otelprofd-test-")


def check_split(stacks):
    """The 60/30/10 workload's folded stacks (tests/workloads/split.c): every sample of it, every hot
    sample with the exact chain main -> caller -> hot function, the shares within 5 points; fails
    otherwise."""
    total = sum(stacks.values())
    counts = {"hot_a": 0, "hot_b": 0, "hot_c": 0}
    broken = 0
    for stack, n in stacks.items():
        if stack[0] != "split":
            fail(f"a sample of another process: {';'.join(stack)}")
        leaf = stack[-1]
        if leaf in counts:
            caller = "caller_" + leaf[-1]
            if stack[-3:-1] != ("main", caller):
                print(f"without the chain main -> {caller} -> {leaf} ({n}): {';'.join(stack)}")
                broken += n
            counts[leaf] += n
    hot = sum(counts.values())
    print(f"{hot - broken} of {hot} hot samples have the exact chain main -> caller -> hot function")
    if broken:
        fail(f"{broken} of {hot} hot samples lack the chain main -> caller -> hot function")
    for name, want in {"hot_a": 60, "hot_b": 30, "hot_c": 10}.items():
        share = 100.0 * counts[name] / total
        print(f"{name}: {share:.1f}% (expected {want}%)")
        if abs(share - want) > 5:
            fail(f"{name} has {share:.1f}% of {total} samples, expected {want} +- 5")
