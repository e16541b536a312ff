#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""otelprofd --alloc over the allocation workload (tests/workloads/allocs.c) preloading
libotelprofd-alloc.so at a 16 KiB mean, with the real USDT programs:

1. `otelprofd --alloc -- allocs` (the program started, profiled until it exits): alloc_space of
   every site within 10% of the bytes the workload counted itself (leaked and freed sites, four
   threads, realloc growth, a forked child); inuse_space holds the leaked sites only, within 15%
   (what each process held at its exit); nothing dropped. The child frees its copies of blocks the
   parent allocated before the fork (leak_inherited): counted as frees of allocations not known, the
   parent's in-use bytes unchanged, none in the child.
2. A daemon attached with --pid to a waiting workload, pprof output: pprof's four heap sample types
   after the CPU ones, each sample's values in its own types only, the sites' bytes within 10%.
3. A process without the library, under --alloc with the library's probes attached: not one probe
   runs (it costs nothing), no allocation profile.
4. The other outputs show the heap types: the top table's allocated and in-use sections (the leaked
   sites in use, the freed ones not), the HTML page's views, and `otelprofd diff --sample-type`.
5. --cgroup: the allocations of a workload in the cgroup, none of one outside (the probes, attached
   per file, run in both). The one inside preloads a copy of the library, in a cgroup below the one
   given: the daemon finds it by reading that cgroup's processes (cgroup.procs, its descendants').
6. 1 again with every module open 300 ms late (on purpose): allocation stacks are put off to later
   turns with their frees held, and the sites' bytes are as in 1.
"""
import os
import re
import shutil
import subprocess

import bpftest
import cgrouptest
import pprofdecode

bpftest.require_bpf()
workload = os.environ["ALLOCS_WORKLOAD"]
lib = os.environ["ALLOC_LIB"]
out = bpftest.tmpdir()
env = dict(os.environ, OTELPROFD_ALLOC_LIB=lib)
MEAN = 16384
PARENT_SITES = ("leak_small", "leak_big", "churn_free", "grow_realloc", "thread_site", "leak_inherited")
CHILD_SITES = ("child_leak", "child_free")


def truth(stdout):
    """{site: (bytes allocated, bytes still held)} as the workload counted them."""
    sites = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit():
            sites[parts[0]] = (int(parts[1]), int(parts[2]))
    if set(sites) != set(PARENT_SITES + CHILD_SITES):
        bpftest.fail(f"the workload printed {sites}")
    return sites


def by_site(path):
    """{(process, site): bytes} from a folded file: a stack counts for the site among its frames."""
    found = {}
    for stack, value in bpftest.read_folded(path).items():
        for site in PARENT_SITES + CHILD_SITES:
            if site in stack[1:]:
                found[(stack[0], site)] = found.get((stack[0], site), 0) + value
    return found


def check_drops(log):
    m = re.search(r"dropped: (\d+) ring buffer full, (\d+) scratch busy, (\d+) not kept live", log)
    if not m:
        bpftest.fail("no allocation counters in the log")
    if any(int(x) for x in m.groups()):
        bpftest.fail(f"allocations were dropped: {m.group(0)}")


def within(name, got, want, tolerance):
    error = abs(got - want) / want
    print(f"  {name}: {got} against {want} ({100 * error:.1f}%)")
    if error > tolerance:
        bpftest.fail(f"{name}: {got} bytes, the workload counted {want} (more than {100 * tolerance:.0f}% off)")


def run_started(name, run_env):
    """otelprofd --alloc -- allocs: every site's bytes checked against what the workload counted.
    Returns otelprofd's log."""
    folded = os.path.join(out, name + ".folded")
    cmd = [bpftest.otelprofd(), "--alloc", "--alloc-sample", str(MEAN), "--ringbuf-size", "64MiB", "-v", "-o", folded,
           "--", workload]
    print("$", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=180)
    log = p.stderr
    print("\n".join(line for line in log.splitlines() if "debug: libbpf" not in line)[-3000:])
    if p.returncode != 0:
        bpftest.fail(f"otelprofd -- allocs exited {p.returncode}")
    check_drops(log)
    sites = truth(p.stdout)
    alloc = by_site(os.path.join(out, name + ".alloc_space.folded"))
    inuse = by_site(os.path.join(out, name + ".inuse_space.folded"))
    print("alloc_space per site:")
    for site in PARENT_SITES + CHILD_SITES:
        process = "allocs-child" if site in CHILD_SITES else "allocs"
        within(f"{process} {site}", alloc.get((process, site), 0), sites[site][0], 0.10)
    print("inuse_space per site:")
    for site in PARENT_SITES + CHILD_SITES:
        process = "allocs-child" if site in CHILD_SITES else "allocs"
        got, held = inuse.get((process, site), 0), sites[site][1]
        if held:
            within(f"{process} {site}", got, held, 0.15)
        elif got:
            bpftest.fail(f"{process} {site} freed everything, but its in-use bytes are {got}")
        else:
            print(f"  {process} {site}: 0, all freed")
    # The child's frees of the blocks it inherited: not the parent's, not the child's own allocations.
    if alloc.get(("allocs-child", "leak_inherited")) or inuse.get(("allocs-child", "leak_inherited")):
        bpftest.fail("the child's frees of inherited blocks put leak_inherited in the child's profiles")
    m = re.search(r"(\d+) frees of allocations not known", log)
    unknown = int(m.group(1)) if m else 0
    # About 40 MB / 16 KiB = 2,400 sampled inherited blocks; the child frees them all.
    print(f"  frees of allocations not known: {unknown}")
    if unknown < 1200:
        bpftest.fail(f"{unknown} frees of allocations not known: the child's frees of inherited blocks were not seen")
    return log


# 1. The program started by otelprofd.
run_started("run", env)

# 2. A daemon attached to a running (waiting) workload, pprof.
pprof = os.path.join(out, "attached.pb.gz")
w = subprocess.Popen([workload, "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                     env=dict(os.environ, LD_PRELOAD=lib, OTELPROFD_ALLOC_SAMPLE=str(MEAN)))
cmd = [bpftest.otelprofd(), "--alloc", "--pid", str(w.pid), "--follow-children", "--ringbuf-size", "64MiB",
       "--duration", "60s", "-o", pprof]
print("$", " ".join(cmd), flush=True)
d = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
log = bpftest.wait_profiling(d, others=(w,))
w.stdin.write("go\n")
w.stdin.flush()
sites = truth(w.communicate(timeout=120)[0])
# The workload is gone: end the run (SIGINT) rather than wait for the duration.
d.send_signal(2)
log += d.communicate(timeout=120)[1]
print(log[-2000:])
if d.returncode != 0:
    bpftest.fail(f"otelprofd exited {d.returncode}")
check_drops(log)
types, values = pprofdecode.sample_types(pprof)
want = [("samples", "count"), ("cpu", "nanoseconds"), ("alloc_objects", "count"), ("alloc_space", "bytes"),
        ("inuse_objects", "count"), ("inuse_space", "bytes")]
if types != want:
    bpftest.fail(f"pprof sample types {types}, not {want}")
samples = [(labels, frames) for labels, frames, _ in pprofdecode.samples(pprof, frames=True)]
space = {}
for (labels, frames), v in zip(samples, values):
    kinds = [bool(v[0] or v[1]), bool(v[2] or v[3]), bool(v[4] or v[5])]
    if len(v) != 6 or sum(kinds) != 1:
        bpftest.fail(f"a pprof sample mixes sample types: {v}")
    for site in PARENT_SITES:
        if site in frames:
            space[site] = space.get(site, 0) + v[3]
print("pprof alloc_space per site:")
for site in PARENT_SITES:
    within(site, space.get(site, 0), sites[site][0], 0.10)

# 3. A process without the library: the probes attached (the library's file), none runs.
w = subprocess.Popen([workload, "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
plain = os.path.join(out, "plain.folded")
cmd = [bpftest.otelprofd(), "--alloc", "--pid", str(w.pid), "--follow-children", "-v", "--duration", "60s",
       "-o", plain]
print("$", " ".join(cmd), flush=True)
d = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
log = bpftest.wait_profiling(d, others=(w,))
w.stdin.write("go\n")
w.stdin.flush()
w.communicate(timeout=120)
d.send_signal(2)
log += d.communicate(timeout=120)[1]
m = re.search(r"alloc: bpf: (\d+) alloc probes ran \(\d+ of other processes\), (\d+) free probes ran", log)
a = re.search(r"files: (\d+) attached", log)
print(m and m.group(0), a and a.group(0))
if not m or not a or int(a.group(1)) < 1:
    bpftest.fail("the library's probes were not attached, or not counted")
if int(m.group(1)) or int(m.group(2)):
    bpftest.fail(f"a process without the library ran the probes: {m.group(0)}")
if os.path.getsize(os.path.join(out, "plain.alloc_space.folded")):
    bpftest.fail("an allocation profile for a process without the library")

# 4. The top table, the page, diff.
cmd = [bpftest.otelprofd(), "--alloc", "--alloc-sample", str(MEAN), "--ringbuf-size", "64MiB", "--top", "40",
       "--", workload]
p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=180)
top = p.stdout
if p.returncode != 0 or "\nAllocated: " not in top or "\nIn use at the end: " not in top:
    bpftest.fail(f"the top table has no allocation sections (exit {p.returncode}): {top[-3000:]}")
allocated, in_use = top.split("\nAllocated: ")[1].split("\nIn use at the end: ")
print("In use at the end: " + in_use[:1500])
for site in PARENT_SITES:
    if site not in allocated:
        bpftest.fail(f"{site} is not in the top table's allocated section")
    if (site in in_use) != bool(sites[site][1]):
        bpftest.fail(f"{site} {'missing from' if sites[site][1] else 'in'} the top table's in-use section")
page = os.path.join(out, "run.html")
p = subprocess.run([bpftest.otelprofd(), "--alloc", "--alloc-sample", str(MEAN), "--ringbuf-size", "64MiB", "-o",
                    page, "--", workload], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                   timeout=180)
html = open(page).read() if p.returncode == 0 else ""
for view in ("On-CPU", "Allocated bytes", "Allocations", "In-use bytes", "In-use objects"):
    if f'"{view}"' not in html:
        bpftest.fail(f"the page has no {view} view (exit {p.returncode})")
# diff's totals: the CPU samples by default, the bytes the process held at its exit with inuse_space.
held = sum(v[5] for v in values)
for args, want in (([], sum(v[0] for v in values)), (["--sample-type", "inuse_space"], held)):
    p = bpftest.run([bpftest.otelprofd(), "diff", *args, pprof, pprof])
    m = re.search(r"base (\d+), new (\d+)", p.stdout)
    if not m or int(m.group(1)) != want or held < 50 * 10**6:
        bpftest.fail(f"otelprofd diff {' '.join(args)} does not compare totals of {want}")
p = bpftest.run([bpftest.otelprofd(), "diff", "--sample-type", "nope", pprof, pprof], check=False)
if p.returncode != 2:
    bpftest.fail(f"diff of a sample type the profiles lack exited {p.returncode}, not 2")

# 5. --cgroup: one workload inside, one outside (a copy under its own name, so its comm tells it apart).
outside_bin = os.path.join(out, "allocs_out")
shutil.copy(workload, outside_bin)
tree = cgrouptest.Tree(cgrouptest.v2_root())
folded = os.path.join(out, "cgroup.folded")
try:
    cgroup_dir = tree.make("otelprofd-alloc-test/in")

    def enter():
        with open(os.path.join(cgroup_dir, "cgroup.procs"), "w") as f:
            f.write("0")
    preload = dict(os.environ, LD_PRELOAD=lib, OTELPROFD_ALLOC_SAMPLE=str(MEAN))
    lib_copy = os.path.join(out, "libotelprofd-alloc-copy.so")  # attached only if the scan finds it
    shutil.copy(lib, lib_copy)
    inside = subprocess.Popen([workload, "wait"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                              env=dict(preload, LD_PRELOAD=lib_copy), preexec_fn=enter)
    outside = subprocess.Popen([outside_bin, "wait"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                               env=preload)
    cmd = [bpftest.otelprofd(), "--alloc", "--cgroup", "/otelprofd-alloc-test", "--ringbuf-size", "64MiB",
           "--duration", "60s", "-o", folded]
    print("$", " ".join(cmd), flush=True)
    d = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = bpftest.wait_profiling(d, others=(inside, outside))
    for w in (inside, outside):
        w.stdin.write("go\n")
        w.stdin.flush()
    for w in (inside, outside):
        w.communicate(timeout=120)
    d.send_signal(2)
    log += d.communicate(timeout=120)[1]
finally:
    tree.remove()
print(log[-1500:])
if d.returncode != 0:
    bpftest.fail(f"otelprofd --cgroup exited {d.returncode}")
check_drops(log)
found = by_site(os.path.join(out, "cgroup.alloc_space.folded"))
print("--cgroup:", found)
if not found.get(("allocs", "leak_small")) or any(proc == "allocs_out" for proc, _ in found):
    bpftest.fail("--cgroup: the allocations of the workload inside are missing, or the one outside's are there")

# 6. Modules slow to open (every open in the symbolizer's thread 300 ms late, on purpose): the
# allocation stacks that needed one are put off to later turns, the frees of their addresses held to
# follow them, never waited for in the loop (before, each waited up to 200 ms); the sites' bytes come
# out as in 1, the leaked ones in use and the freed ones not.
log = run_started("slow-opens", dict(env, OTELPROFD_TEST_OPEN_DELAY_MS="300"))
m = re.search(r"put off to a later turn: \d+ samples, (\d+) off-CPU and allocation stacks \((\d+) ends", log)
print(f"slow opens: {m.group(1) if m else '?'} allocation stacks put off, {m.group(2) if m else '?'} frees held")
if not m or int(m.group(1)) == 0:
    bpftest.fail("slow opens: no allocation stack put off to a later turn in the log")
print("PASS")
