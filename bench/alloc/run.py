#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Allocation profiling overhead (issue 28): bench/workloads/tree.c (binary trees of 48-byte nodes
built, walked and freed: millions of small allocations and nothing else) alone, with
libotelprofd-alloc.so preloaded (no daemon), with the library and `otelprofd --alloc` (default
512 KiB mean), under heaptrack, and under bcc's memleak (bpfcc-tools' memleak-bpfcc; when it cannot
compile its BPF here, the same probes written for bpftrace, said as such).

Each round runs every fast configuration once, in a rotating order; figures are medians over rounds
with their spread (lowest and highest). The workloads run in a cgroup v2 of their own.
- wall: the workload's own timing of its work; CPU: the workload's own user + system time over that
  window (getrusage: uprobes and their BPF programs run in its system time).
- --together (what a shared, loaded machine needs): each configuration runs at the same time as the
  program alone, each pinned to one of the two CPUs (swapped every round), the partner in another
  cgroup; a slowdown is the median of the pairs' ratios, so the load of the rest of the machine,
  which moves the CPU time of a run by tens of percent here, falls on both sides of each ratio.
- The daemon is started before the window (`otelprofd --alloc --cgroup CG`, the library's path
  attached at start, on-CPU samples of that cgroup at its 99 Hz), and its CPU is read from the
  workload's start until it has read every record (it idles): the per-allocation cost (each sampled
  allocation's record, unwinding, aggregation, and the on-CPU samples), apart from its start-up (BPF
  load) and its final profile (symbolizing, writing), both reported beside it. The BPF programs'
  own time per run comes from kernel.bpf_stats_enabled (turned on for the run).
- Instructions per call: valgrind's callgrind over 4 and 8 trees (exact, whatever the load).
- heaptrack and memleak cost so much per call that they run over a share of the trees (--slow-trees),
  in the first --slow-rounds rounds only, alone; their figures are scaled up to the whole run.
  memleak is bcc's memleak-bpfcc (attached with -p to the program waiting on its standard input),
  compiled against Debian 12's 6.1 kernel headers when this kernel has none (BCC_HEADERS below);
  without any headers, memleak's probes written for bpftrace stand in, said as such.
Usage: bench/alloc/run.py BUILD_DIR [--rounds N] [--depth D] [--trees N] [--before-lib SO] [--together]
       bench/alloc/run.py BUILD_DIR --trees N --alternate ROUNDS [--before-lib SO]   (short runs one after the
                                                 other: see alternate(); --before-lib adds that library
                                                 alone and under the same daemon)
As root.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
# memleak's probes: malloc's size at entry, its address and the stack at return, free's address.
MEMLEAK_BT = f"""
uprobe:{LIBC}:malloc /pid == cpid/ {{ @size[tid] = arg0; }}
uretprobe:{LIBC}:malloc /pid == cpid && @size[tid]/ {{
    @live[retval] = @size[tid]; @bystack[ustack] = sum(@size[tid]); delete(@size[tid]); }}
uprobe:{LIBC}:free /pid == cpid/ {{ delete(@live[arg0]); }}
END {{ clear(@live); clear(@size); }}
"""
# bcc 0.26 compiles memleak's BPF from C against kernel headers. This kernel has no headers package
# and no kheaders; Debian 12's own (linux-headers-amd64, 6.1) serve for memleak's probes, which read
# no kernel structure: their two directories merged into one tree that BCC_KERNEL_SOURCE points at.
BCC_HEADERS = "/var/tmp/otelprofd-bcc-kernel"


def cpu_of(pid):
    """User + system seconds of a process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def v2_root():
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(root, "cgroup.subtree_control")):  # a v2 root only
            return root
    sys.exit("no cgroup v2 hierarchy mounted")


class Workload:
    """The tree program in the profiled cgroup; its partner (the program alone, run at the same time
    on the other CPU) in a cgroup of its own, which no daemon profiles."""

    def __init__(self, build, depth, trees, cgroup, plain):
        self.tree = os.path.join(build, "bench", "tree")
        self.depth, self.trees, self.cgroup, self.plain = depth, trees, cgroup, plain

    def start(self, trees=None, env=None, wait=False, cpu=None, cgroup=None):
        def enter():
            with open(os.path.join(cgroup or self.cgroup, "cgroup.procs"), "w") as f:
                f.write("0")
            if cpu is not None:
                os.sched_setaffinity(0, {cpu})
        args = [self.tree, str(self.depth), str(trees or self.trees)] + (["wait"] if wait else [])
        return subprocess.Popen(args, env=env, preexec_fn=enter, stdin=subprocess.PIPE if wait else None,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    @staticmethod
    def result(p):
        """Its own figures (wall and CPU of its work), and its user CPU from wait4()'s rusage (the
        whole process: the library's cost is user time; the uprobes' traps and BPF are system time)."""
        out, err = p.stdout.read(), p.stderr.read()  # tree writes to stderr only when it fails
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise RuntimeError(f"tree exited {p.returncode}: {err[-500:]}")
        line = next(x for x in out.splitlines() if x[:1].isdigit())
        wall, allocs, _, cpu = line.split()
        return {"wall": float(wall), "cpu": float(cpu), "allocs": int(allocs), "user": usage.ru_utime}

    def run(self, trees=None, env=None, pin=None):
        """pin: (cpu, partner's cpu): run beside the program alone, both pinned, the partner's result
        in "pair" (both see the same load from the rest of the machine)."""
        if not pin:
            return self.result(self.start(trees, env))
        partner = self.start(trees, None, cpu=pin[1], cgroup=self.plain)
        x = self.result(self.start(trees, env, cpu=pin[0]))
        x["pair"] = self.result(partner)
        return x


def start_daemon(build, lib, cgroup, out):
    """`otelprofd --alloc --cgroup CGROUP -v`, the library attached at start; returns once it profiles."""
    env = dict(os.environ, OTELPROFD_ALLOC_LIB=lib)
    d = subprocess.Popen([os.path.join(build, "daemon", "otelprofd"), "--alloc", "-d", "0", "--cgroup", cgroup, "-v",
                          "-o", os.path.join(out, "alloc.pb.gz")],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = ""
    while "Profiling" not in line:
        line = d.stderr.readline()
        if not line:
            raise RuntimeError("otelprofd did not start")
    # Read its -v lines as they come: a pipe left full blocks the daemon's next write (its loop
    # stood still for 87 s in one run, and its ring buffer overflowed meanwhile).
    d.lines = []
    d.drain = threading.Thread(target=lambda: d.lines.extend(d.stderr), daemon=True)
    d.drain.start()
    return d


def daemon_log(d):
    """The daemon's stderr after it exited."""
    d.wait()
    d.drain.join()
    return "".join(d.lines)


def run_daemon(build, lib, wl, out, pin=None):
    """The daemon started first, the workload in its cgroup, the daemon stopped after."""
    d = start_daemon(build, lib, wl.cgroup, out)
    start = cpu_of(d.pid)
    ours = prog_ids_of(d.pid)  # not another daemon's programs of the same names
    bpf0 = bpf_run_times(ours)
    r = wl.run(env=dict(os.environ, LD_PRELOAD=lib), pin=pin)
    wait_idle(d)
    window = cpu_of(d.pid) - start
    bpf1 = bpf_run_times(ours)
    r["bpf"] = {k: (bpf1[k][0] - bpf0.get(k, (0, 0))[0], bpf1[k][1] - bpf0.get(k, (0, 0))[1]) for k in bpf1}
    before_stop = cpu_of(d.pid)
    d.send_signal(signal.SIGINT)
    final = 0.0
    # Its last profile: CPU from SIGINT to exit, read until the process is gone.
    while d.poll() is None:
        try:
            final = cpu_of(d.pid) - before_stop
        except OSError:
            break
        time.sleep(0.02)
    log = daemon_log(d)
    sampled = next((int(x.split("Allocations: ")[1].split()[0]) for x in log.splitlines() if "Allocations: " in x), 0)
    r.update(daemon=window, daemon_start=start, daemon_final=final, sampled=sampled)
    return r


def wait_idle(d, limit=120):
    """The records still in the ring buffer (a loaded machine's daemon lags): until the daemon's CPU
    stops growing for a second (at most limit seconds)."""
    until, last = time.monotonic() + limit, cpu_of(d.pid)
    while time.monotonic() < until:
        time.sleep(1)
        now = cpu_of(d.pid)
        if now - last <= 0.01:
            break
        last = now


def accounting(log):
    """The daemon's account of the allocations sampled in its processes (its -v end lines): {what: n}."""
    found = {}
    for key, pattern in (("kept", r"Allocations: (\d+) sampled"), ("ring buffer full", r"dropped: (\d+) ring buffer full"),
                         ("scratch busy", r"(\d+) scratch busy"), ("aggregate", r"(\d+) by the aggregate"),
                         ("process gone", r"(\d+) put off and their process gone"),
                         ("unread at the end", r"(\d+) sent and not read"),
                         ("probes ran", r"alloc: bpf: (\d+) alloc probes ran"),
                         ("of other processes", r"alloc probes ran \((\d+) of other processes")):
        m = re.search(pattern, log)
        found[key] = int(m.group(1)) if m else None
    return found


def alloc_programs():
    """{id: (name, run ns, runs)} of the loaded BPF programs named on_alloc or on_free
    (kernel.bpf_stats_enabled turned on by main())."""
    p = subprocess.run(["bpftool", "--json", "prog", "show"], stdout=subprocess.PIPE, text=True)
    return {x["id"]: (x["name"], x.get("run_time_ns", 0), x.get("run_cnt", 0)) for x in json.loads(p.stdout or "[]")
            if x.get("name") in ("on_alloc", "on_free")}


def prog_ids_of(pid):
    """The ids of the BPF programs process pid holds open (its /proc/PID/fdinfo)."""
    ids = set()
    fdinfo = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fdinfo):
        try:
            with open(os.path.join(fdinfo, fd)) as f:
                ids.update(int(line.split()[1]) for line in f if line.startswith("prog_id:"))
        except OSError:
            pass
    return ids


def bpf_run_times(ours):
    """{program: (run ns, runs)} of the daemon's own programs (ours: their ids)."""
    now = alloc_programs()
    return {now[i][0]: now[i][1:] for i in ours if i in now}


def memleak_setup():
    """(command prefix, environment, what it is) for bcc's memleak, or None and why not."""
    tool = shutil.which("memleak-bpfcc")
    if not tool:
        return None, "memleak-bpfcc is not installed (Debian's bpfcc-tools)"
    env = dict(os.environ)
    if not os.path.isdir(f"/lib/modules/{os.uname().release}/build"):
        common = sorted(d for d in os.listdir("/usr/src") if d.startswith("linux-headers-") and d.endswith("-common"))
        if not common:
            return None, ("no kernel headers for this kernel (no /lib/modules/RELEASE/build, no CONFIG_IKHEADERS); "
                          "install linux-headers-amd64 to compile memleak against Debian 12's")
        arch = common[-1][:-len("common")] + "amd64"
        if not os.path.isdir(BCC_HEADERS):
            tmp = BCC_HEADERS + ".new"
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            subprocess.run(["cp", "-rs", f"/usr/src/{common[-1]}/.", tmp], check=True)
            subprocess.run(["cp", "-rsf", f"/usr/src/{arch}/.", tmp], check=True)
            os.rename(tmp, BCC_HEADERS)
        env["BCC_KERNEL_SOURCE"] = BCC_HEADERS
        return ([tool], env, f"memleak-bpfcc (bcc 0.26) compiled against {arch}'s headers"), ""
    return ([tool], env, "memleak-bpfcc (bcc 0.26)"), ""


def run_memleak(memleak, wl, trees):
    """memleak -p on the waiting workload: its probes attached, then the work."""
    cmd, env, _ = memleak
    p = wl.start(trees, wait=True)
    assert p.stdout.readline().strip() == "ready"
    m = subprocess.Popen(cmd + ["-p", str(p.pid), "3600"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    line = ""
    while "Attaching to pid" not in line:
        line = m.stdout.readline()
        if not line:
            p.kill()
            raise RuntimeError("memleak-bpfcc did not start")
    time.sleep(5)  # it attaches its uprobes just after saying so
    p.stdin.write("go\n")
    p.stdin.close()
    p.stdin = None
    r = wl.result(p)
    m.send_signal(signal.SIGINT)
    try:
        m.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        m.kill()
        m.communicate()
    return r


def alternate(args, build, lib, wl, out):
    """--alternate N: short runs of the three configurations one after the other on the same CPU
    (the CPU swapped every round, the order rotated), so that each round's runs see the same load
    within a second or two; a round's ratio is each configuration's user CPU (wait4) against the
    program alone's in that round, and the program alone runs twice a round (A/A: the noise floor).
    One daemon profiles the cgroup over all rounds; the library without it is a copy of the file (a
    uprobe is on the file, whatever the process)."""
    plain_lib = os.path.join(out, "libotelprofd-alloc-plain.so")
    shutil.copy(lib, plain_lib)
    d = start_daemon(build, lib, wl.cgroup, out)
    if args.before_lib:
        # Two copies: one for the daemon's probes (found by its scan of the cgroup's processes: a run
        # first, then a scan's time, so that every measured run is seen from its first allocation),
        # one without them.
        before_lib, before_plain = os.path.join(out, "before.so"), os.path.join(out, "before-plain.so")
        shutil.copy(args.before_lib, before_lib)
        shutil.copy(args.before_lib, before_plain)
        wl.result(wl.start(trees=1, env=dict(os.environ, LD_PRELOAD=before_lib), wait=False))
        time.sleep(3)
    d0 = cpu_of(d.pid)
    ours = prog_ids_of(d.pid)
    bpf0 = bpf_run_times(ours)
    runs = {
        "alone": lambda cpu: wl.result(wl.start(cpu=cpu, cgroup=wl.plain)),
        "alone again (A/A)": lambda cpu: wl.result(wl.start(cpu=cpu, cgroup=wl.plain)),
        "library, no daemon": lambda cpu: wl.result(wl.start(env=dict(os.environ, LD_PRELOAD=plain_lib), cpu=cpu,
                                                             cgroup=wl.plain)),
        "library + otelprofd --alloc (512 KiB)": lambda cpu: wl.result(wl.start(env=dict(os.environ, LD_PRELOAD=lib),
                                                                                cpu=cpu)),
    }
    if args.before_lib:
        runs["library before, no daemon"] = lambda cpu: wl.result(wl.start(env=dict(os.environ, LD_PRELOAD=before_plain),
                                                                            cpu=cpu, cgroup=wl.plain))
        runs["library before + otelprofd --alloc"] = lambda cpu: wl.result(wl.start(env=dict(os.environ,
                                                                                             LD_PRELOAD=before_lib),
                                                                                    cpu=cpu))
    names = list(runs)
    got = {n: [] for n in names}
    try:
        for r in range(args.alternate):
            for n in names[r % len(names):] + names[:r % len(names)]:
                got[n].append(runs[n](r % 2))
    finally:
        wait_idle(d)  # the last runs' records read (a loaded machine's daemon lags by seconds)
        d_cpu = cpu_of(d.pid) - d0
        bpf1 = bpf_run_times(ours)
        d.send_signal(signal.SIGINT)
        log = daemon_log(d)
    sampled = next((int(x.split("Allocations: ")[1].split()[0]) for x in log.splitlines() if "Allocations: " in x), 0)
    alone = got["alone"]
    total = sum(x["user"] for x in alone)
    print(f"\n--alternate {args.alternate}: tree {wl.depth} {wl.trees}, {alone[0]['allocs']} allocations a run; "
          f"the program alone {statistics.median(x['user'] for x in alone):.3f} s user CPU a run (median; "
          f"{min(x['user'] for x in alone):.3f}-{max(x['user'] for x in alone):.3f})")
    print("| configuration | user CPU against alone: median (range) | standard error of the median | user + system "
          "CPU against alone: median | wall against alone: median |")
    print("|---|---|---|---|---|")
    for n in names[1:]:
        rows = {}
        for key in ("user", "cpu", "wall"):
            rows[key] = [100 * (x[key] / a[key] - 1) for x, a in zip(got[n], alone)]
        u = rows["user"]
        print(f"| {n} | {statistics.median(u):+.1f}% ({min(u):+.1f}% to {max(u):+.1f}%) | "
              f"{1.2533 * statistics.pstdev(u) / len(u) ** 0.5:.1f} points | {statistics.median(rows['cpu']):+.1f}% | "
              f"{statistics.median(rows['wall']):+.1f}% |")
    runs_alloc = bpf1.get("on_alloc", (0, 0))[1] - bpf0.get("on_alloc", (0, 0))[1]
    for prog in ("on_alloc", "on_free"):
        if prog in bpf1:
            t, c = (bpf1[prog][0] - bpf0.get(prog, (0, 0))[0]), (bpf1[prog][1] - bpf0.get(prog, (0, 0))[1])
            if c:
                print(f"BPF {prog}: {t / c:.0f} ns per run, {c} runs")
    acc = accounting(log)
    ours = runs_alloc - (acc["of other processes"] or 0)
    print(f"daemon: {d_cpu:.2f} s CPU over the {args.alternate} rounds ({100 * d_cpu / total:.1f}% of the program's "
          f"user CPU alone over as many runs; {1e6 * d_cpu / max(ours, 1):.0f} us per sampled allocation, "
          f"{runs_alloc} alloc probes ran, {acc['of other processes']} of them in processes outside its cgroup, "
          f"{sampled} in its profile)")
    print(f"sampled allocations of the profiled runs: {ours}; the daemon's account: {acc}")
    for line in log.splitlines():
        if any(k in line for k in ("time per sample", "opens took", "Allocations: ", "alloc: ", "put off", "stale")):
            print("daemon -v: " + line.split("debug: ", 1)[-1])
    if args.log:
        with open(args.log, "w") as f:
            f.write(log)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--depth", type=int, default=16)
    ap.add_argument("--trees", type=int, default=3000)
    ap.add_argument("--before-lib", help="another build of the library, measured in the same rounds")
    ap.add_argument("--slow-rounds", type=int, default=1, help="rounds of heaptrack and memleak")
    ap.add_argument("--slow-trees", type=int, default=2, help="trees heaptrack and memleak run over")
    ap.add_argument("--together", action="store_true",
                    help="run each configuration beside the program alone, each pinned to one of the two CPUs "
                         "(swapped every round): both see the same load from the rest of the machine")
    ap.add_argument("--alternate", type=int, metavar="N",
                    help="instead: N rounds of short runs, one after the other on one CPU (see alternate())")
    ap.add_argument("--log", help="write the daemon's -v log to this file")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    lib = os.path.join(build, "alloc", "libotelprofd-alloc.so")
    out = tempfile.mkdtemp(prefix="alloc-bench-")
    cgroup = os.path.join(v2_root(), f"otelprofd-alloc-bench-{os.getpid()}")
    os.mkdir(cgroup)
    os.mkdir(cgroup + "-plain")
    wl = Workload(build, args.depth, args.trees, cgroup, cgroup + "-plain")
    # The daemon's probes go on this copy: another run of the bench (or a test) preloading the build's
    # file would fire them too (counted by the daemon as other processes', but in bpf_stats' runs).
    shutil.copy(lib, os.path.join(out, "libotelprofd-alloc.so"))
    lib = os.path.join(out, "libotelprofd-alloc.so")
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_were = f.read().strip()
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1")
    if args.alternate:
        try:
            alternate(args, build, lib, wl, out)
        finally:
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write(stats_were)
            for d in (cgroup, cgroup + "-plain"):
                os.rmdir(d)
            shutil.rmtree(out, ignore_errors=True)
        return
    memleak, why = memleak_setup()
    scale = args.trees / args.slow_trees

    configs = {} if args.together else {"tree alone": lambda pin: wl.run()}
    if args.together:  # the program alone beside the program alone: the pairs' noise floor
        configs["tree alone again (A/A: the noise floor)"] = lambda pin: wl.run(pin=pin)
    if args.before_lib:
        configs["library before (no daemon)"] = \
            lambda pin: wl.run(env=dict(os.environ, LD_PRELOAD=args.before_lib), pin=pin)
    configs["libotelprofd-alloc.so (no daemon)"] = lambda pin: wl.run(env=dict(os.environ, LD_PRELOAD=lib), pin=pin)
    configs["libotelprofd-alloc.so + otelprofd --alloc (512 KiB)"] = lambda pin: run_daemon(build, lib, wl, out, pin)
    slow = {f"heaptrack ({args.slow_trees} trees, scaled)":
            lambda: heaptrack(wl, args.slow_trees, out)}
    if memleak:
        slow[f"{memleak[2]} ({args.slow_trees} trees, scaled)"] = lambda: run_memleak(memleak, wl, args.slow_trees)
    else:
        slow[f"memleak's probes in bpftrace, a stand-in ({args.slow_trees} trees, scaled)"] = \
            lambda: bpftrace_memleak(wl, args.slow_trees)
    results = {n: [] for n in ["tree alone"] + list(configs) + list(slow)}
    if shutil.which("valgrind"):
        alone = instructions(wl, None)
        for n, so in (("library before", args.before_lib), ("libotelprofd-alloc.so", lib)):
            if so:
                print(f"instructions per malloc and free: {n} {instructions(wl, so) - alone:+.1f} "
                      f"(the workload alone: {alone:.1f} per node built, walked and freed; valgrind --tool=callgrind)",
                      flush=True)
    try:
        names = list(configs)
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            pin = (r % 2, 1 - r % 2) if args.together else None
            todo = [(n, configs[n], 1) for n in order]
            if r < args.slow_rounds:
                todo += [(n, lambda pin, f=f: f(), scale) for n, f in slow.items()]
            for n, f, k in todo:
                x = f(pin if k == 1 else None)
                if "pair" in x:
                    results["tree alone"].append(x["pair"])
                x["wall"] *= k
                x["cpu"] *= k
                if "user" in x:
                    x["user"] *= k
                if "all" in x:
                    x["all"] *= k
                results[n].append(x)
                extra = f", daemon {x['daemon']:.2f} s CPU, {x['sampled']} sampled" if "daemon" in x else ""
                if "pair" in x:
                    extra += f"; beside it alone: {x['pair']['wall']:.3f} s wall, {x['pair']['cpu']:.3f} s CPU"
                print(f"round {r + 1}: {n}: {x['wall']:.3f} s wall, {x['cpu']:.3f} s CPU{extra}", file=sys.stderr,
                      flush=True)
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(stats_were)
        for d in (cgroup, cgroup + "-plain"):
            for _ in range(100):  # its last processes leaving
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.1)
        shutil.rmtree(out, ignore_errors=True)
    report(results, memleak, why)


def heaptrack(wl, trees, out):
    """heaptrack's own CPU is in the workload (it is preloaded); its recorder process adds its own."""
    t0 = os.times()
    p = subprocess.run(["heaptrack", "-o", os.path.join(out, "heaptrack"), wl.tree, str(wl.depth), str(trees)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t1 = os.times()
    line = next(x for x in p.stdout.splitlines() if x[:1].isdigit())
    wall, allocs, _, cpu = line.split()
    return {"wall": float(wall), "cpu": float(cpu), "allocs": int(allocs),
            "all": (t1.children_user + t1.children_system) - (t0.children_user + t0.children_system)}


def bpftrace_memleak(wl, trees):
    env = dict(os.environ, BPFTRACE_MAP_KEYS_MAX="16000000")
    p = subprocess.run(["bpftrace", "-c", f"{wl.tree} {wl.depth} {trees}", "-e", MEMLEAK_BT], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = next(x for x in p.stdout.splitlines() if x[:1].isdigit())
    wall, allocs, _, cpu = line.split()
    return {"wall": float(wall), "cpu": float(cpu), "allocs": int(allocs)}


def instructions(wl, lib, trees=4):
    """Instructions per allocation and free (callgrind's count, exact and free of the machine's load):
    the difference between runs of 2 * trees and trees, so start-up cancels out."""
    env = dict(os.environ, LD_PRELOAD=lib) if lib else None
    counts = []
    for n in (trees, 2 * trees):
        for _ in range(3):  # a malloc failed under valgrind when the machine was short of memory: again
            p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", wl.tree,
                                str(wl.depth), str(n)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
            done = [x for x in p.stdout.splitlines() if x[:1].isdigit()]
            if p.returncode == 0 and done:
                break
        else:
            raise RuntimeError(f"tree under valgrind: {p.stderr[-300:]}")
        counts.append((int(next(x for x in p.stderr.splitlines() if "Collected" in x).split()[-1]),
                       int(done[0].split()[1])))
    return (counts[1][0] - counts[0][0]) / (counts[1][1] - counts[0][1])


def spread(xs, fmt):
    return f"{fmt(statistics.median(xs))} ({fmt(min(xs))}-{fmt(max(xs))})" if len(xs) > 1 else fmt(xs[0])


def report(results, memleak, why):
    """Medians with their range; the slowdowns are the medians of each round's ratio to the round's
    own run alone (a round's runs are minutes apart at most: the machine's load moves less), and the
    lowest CPU of each against the lowest alone (other work only ever adds to a run's CPU)."""
    names = [n for n in results if results[n]]
    base = results[names[0]]
    bw, bc = statistics.median(x["wall"] for x in base), statistics.median(x["cpu"] for x in base)
    allocs = base[0]["allocs"]

    def ratios(n, key):
        return [100 * (x[key] / x.get("pair", b)[key] - 1) for x, b in zip(results[n], base) if key in x]

    print("| configuration | wall against alone: median (range) | workload CPU s: median (range) | CPU (user + "
          "system) against alone: median (range) | user CPU against alone: median (range) | lowest CPU against "
          "alone's lowest | user ns per call |")
    print("|---|---|---|---|---|---|---|")
    low = min(x["cpu"] for x in base)
    bu = statistics.median(x["user"] for x in base)
    pct = lambda v: f"{v:+.1f}%"
    for n in names:
        c = [x["cpu"] for x in results[n]]
        ru = ratios(n, "user")
        per_call = f"{statistics.median(ru) / 100 * bu * 1e9 / (2 * allocs):.2f}" if ru else ""
        print(f"| {n} | {spread(ratios(n, 'wall'), pct)} | {spread(c, lambda v: f'{v:.2f}')} | "
              f"{spread(ratios(n, 'cpu'), pct)} | {spread(ru, pct) if ru else ''} | "
              f"{100 * (min(c) / low - 1):+.1f}% | {per_call} |")
    aa = next((n for n in names if "A/A" in n), None)
    if aa:
        for key, what in (("cpu", "CPU"), ("user", "user CPU")):
            r = sorted(abs(v) for v in ratios(aa, key))
            print(f"\nnoise floor ({what}): the program alone against itself, |ratio - 1| over {len(r)} rounds: "
                  f"median {statistics.median(r):.1f}%, largest {r[-1]:.1f}%; the median of {len(r)} rounds moves "
                  f"by about {1.2533 * statistics.pstdev(ratios(aa, key)) / len(r) ** 0.5:.1f} points (its "
                  f"standard error)")
    for n in names:
        d = [x for x in results[n] if "daemon" in x]
        if d:
            win = [x["daemon"] for x in d]
            sampled = statistics.median(x["bpf"].get("on_alloc", (0, x["sampled"]))[1] for x in d)
            kept = statistics.median(x["sampled"] for x in d)
            both = [100 * ((x["cpu"] + x["daemon"]) / x.get("pair", b)["cpu"] - 1) for x, b in zip(results[n], base)]
            print(f"\n{n}: daemon CPU from the workload's start to its last record read {spread(win, lambda v: f'{v:.2f} s')} "
                  f"({100 * statistics.median(win) / bc:.1f}% of the workload's CPU alone; "
                  f"{1e6 * statistics.median(win) / max(sampled, 1):.0f} us per sampled allocation, "
                  f"{sampled:.0f} sampled allocations a run, {kept:.0f} in its profile); workload + daemon CPU "
                  f"against alone "
                  f"{spread(both, lambda v: f'{v:+.1f}%')}; start-up (BPF load) "
                  f"{spread([x['daemon_start'] for x in d], lambda v: f'{v:.2f} s')}, final profile "
                  f"{spread([x['daemon_final'] for x in d], lambda v: f'{v:.2f} s')}")
            for prog in ("on_alloc", "on_free"):
                per = [x["bpf"][prog][0] / x["bpf"][prog][1] for x in d if x["bpf"].get(prog, (0, 0))[1]]
                if per:
                    print(f"  BPF {prog}: {spread(per, lambda v: f'{v:.0f} ns')} per run")
            lib = next((m for m in names if m.startswith("libotelprofd-alloc.so (no")), None)
            if lib:
                pairs = list(zip(results[n], results[lib]))
                runs = sum(x["bpf"].get("on_alloc", (0, 0))[1] for x, _ in pairs)
                if runs:
                    extra = sum(x["cpu"] - y["cpu"] for x, y in pairs) / runs
                    print(f"  the workload's CPU with the daemon against the library alone, over all rounds: "
                          f"{1e6 * extra:.1f} us per sampled allocation (noisy: differences of runs)")
    for n in names:
        h = [x["all"] for x in results[n] if "all" in x]
        if h:
            print(f"\n{n}: with its recorder process (heaptrack_interpret), {statistics.median(h):.1f} s CPU "
                  f"({statistics.median(h) / bc:.0f}x the workload alone)")
    print(f"\n{allocs} allocations (and as many frees) per run; memleak: {memleak[2] if memleak else why}")


if __name__ == "__main__":
    main()
