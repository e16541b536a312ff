#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""DWARF unwinding in otelprofd, side by side with `perf record --call-graph dwarf` (bench/unwind).

1. unwind-bench: CPU per unwound stack on a captured 34-frame stack (rule cache warm, without it, and
   libdwfl's own unwinder on the same window).
2. Debian's own binaries without frame pointers (xz -9, gzip -9, python3 in a loop), each profiled
   by otelprofd and by perf at the same time for the same process at 499 Hz: the fraction of samples
   reaching the program's entry, and how far the callers agree (stacks as sequences of frames,
   kernel frames left out, unsymbolized frames as module+0xADDRESS in both).
3. Cost with both cores busy (xz and python3): otelprofd's own CPU over the run (unwinding and
   symbolizing included) and bytes of stack copied per sample, at 19 Hz and at 499 Hz, against perf
   record (its CPU, then `perf script` that unwinds and symbolizes afterwards) at the same rate.

Usage: bench/unwind/run.py [--build build] [--seconds 20] > bench/unwind/RESULTS.md
"""
import argparse
import collections
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = "/usr/bin/python3"  # Debian's interpreter, not a user install


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def timed(cmd, **kw):
    """Run cmd; return (CompletedProcess-like stdout/stderr, user+sys CPU seconds of it and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode != 0:
        log(p.stderr[-2000:])
        raise SystemExit(f"{cmd[0]} exited {p.returncode}")
    return p, cpu


def read_folded(path):
    stacks = collections.Counter()
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            frames = [x for x in stack.split(";")[1:] if not x.endswith("_[k]")]
            stacks[tuple(frames)] += int(n)
    return stacks


_bases = {}


def image_base(path):
    """Lowest PT_LOAD address minus its offset: 0 for PIE and libraries, 0x400000 for classic executables.
    perf prints unsymbolized addresses relative to it, otelprofd as ELF virtual addresses."""
    if path not in _bases:
        out = subprocess.run(["readelf", "-lW", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True).stdout
        loads = [(int(m.group(2), 16) - int(m.group(1), 16))
                 for m in re.finditer(r"^\s*LOAD\s+0x([0-9a-f]+) 0x([0-9a-f]+)", out, re.M)]
        _bases[path] = min(loads) if loads else 0
    return _bases[path]


def perf_stacks(data, comm=None):
    """{root-first frames: count} from perf script, the same frame names as otelprofd's folded output."""
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,ip,sym,dso"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    stacks = collections.Counter()
    for block in out.split("\n\n"):
        lines = [l for l in block.split("\n") if l.strip()]
        if not lines:
            continue
        if comm and lines[0].split()[0] != comm:
            continue
        frames = []
        for l in lines[1:]:
            m = re.match(r"\s*([0-9a-f]+) (.*) \((.*)\)$", l)
            if not m:
                continue
            ip, sym, dso = m.groups()
            if "kernel" in dso or dso.startswith("[") and dso != "[unknown]":
                continue
            sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
            if sym == "[unknown]":
                sym = f"{os.path.basename(dso)}+0x{int(ip, 16) + image_base(dso):x}"
            frames.append(sym)
        stacks[tuple(reversed(frames))] += 1
    return stacks


def entry_share(stacks):
    total = sum(stacks.values())
    reached = sum(n for s, n in stacks.items() if "__libc_start_call_main" in s or "_start" in s)
    return reached, total


def agreement(a, b, callers_only=False):
    """Share of a's samples whose whole stack (or, callers_only, the stack without its leaf frame) is also
    one of b's. The leaf alone can differ by name without a different unwinding: a symbol alias
    (__libc_read, __GI___libc_read), or an unsymbolized leaf under a kernel frame, which otelprofd
    labels at its return address - 1 and perf at the address itself."""
    total = sum(a.values())
    if callers_only:
        b = {s[:-1] for s in b}
        return sum(n for s, n in a.items() if s[:-1] in b) / total if total else 0.0
    return sum(n for s, n in a.items() if s in b) / total if total else 0.0


def caller_agreement(a, b):
    """Share of a's (caller, callee) frame pairs, weighted by samples, that b also has."""
    pairs_b = set()
    for s in b:
        pairs_b.update(zip(s, s[1:]))
    total = hit = 0
    for s, n in a.items():
        for p in zip(s, s[1:]):
            total += n
            hit += n * (p in pairs_b)
    return hit / total if total else 0.0


def compare(build, tmp, seconds):
    otelprofd = os.path.join(build, "daemon", "otelprofd")
    data = os.path.join(tmp, "random.bin")
    with open(data, "wb") as f:
        f.write(os.urandom(256 << 20))
    workloads = {
        "xz -9": (["xz", "-9", "-T1", "-c", data], "xz"),
        "gzip -9": (["sh", "-c", "head -c 4G /dev/urandom | gzip -9 > /dev/null"], "gzip"),
        "python3 loop": ([PY, "-c", "x = 0\nwhile True:\n    x = (x * 31 + 7) % 1000003\n"], "python3"),
    }
    rows = []
    for name, (cmd, comm) in workloads.items():
        w = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        time.sleep(0.5)
        # The process itself, or (gzip behind a pipe) the newest of that name.
        pid = str(w.pid) if cmd[0] != "sh" else \
            subprocess.run(["pgrep", "-n", "-x", comm], stdout=subprocess.PIPE, text=True).stdout.split()[0]
        folded = os.path.join(tmp, comm + ".folded")
        pdata = os.path.join(tmp, comm + ".perf.data")
        perf = subprocess.Popen(["perf", "record", "-q", "--call-graph", "dwarf,16384", "-F", "499", "-p", pid,
                                 "-o", pdata, "--", "sleep", str(seconds)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        ours, _ = timed([otelprofd, "--pid", pid, "-F", "499", "-d", f"{seconds}s", "-o", folded, "-v"])
        perf.wait()
        if cmd[0] == "sh":
            subprocess.run(["kill", pid])
        w.kill()
        w.wait()
        a, b = read_folded(folded), perf_stacks(pdata, comm)
        ra, ta = entry_share(a)
        rb, tb = entry_share(b)
        top = max(a, key=a.get) if a else ()
        rows.append((name, ra, ta, rb, tb, agreement(a, b), agreement(b, a), agreement(a, b, True),
                     agreement(b, a, True), caller_agreement(a, b), caller_agreement(b, a), ";".join(top), a[top],
                     b.get(top, 0)))
        log(name, rows[-1][:9])
    return rows


def cost(build, tmp, seconds, freq):
    otelprofd = os.path.join(build, "daemon", "otelprofd")
    data = os.path.join(tmp, "random.bin")
    load = [subprocess.Popen(["xz", "-9", "-T1", "-c", data], stdout=subprocess.DEVNULL),
            subprocess.Popen([PY, "-c", "x = 0\nwhile True:\n    x = (x * 31 + 7) % 1000003\n"])]
    try:
        time.sleep(0.5)
        p, ours = timed([otelprofd, "-F", str(freq), "-d", f"{seconds}s", "-o", os.path.join(tmp, "all.folded"),
                         "-v"])
        m = re.search(r"(\d+) samples kept", p.stderr)
        samples = int(m.group(1)) if m else 0
        m = re.search(r"stack bytes received \((\d+) per sample\)", p.stderr)
        bytes_per = int(m.group(1)) if m else 0
        m = re.search(r"median under (\d+) us, 90% under (\d+) us, mean ([\d.]+) us", p.stderr)
        median, p90, mean = m.groups() if m else ("?", "?", "?")
        m = re.search(r"Unwound (\d+) of (\d+) user stacks", p.stderr)
        unwound = m.groups() if m else ("?", "?")
        pdata = os.path.join(tmp, f"all-{freq}.perf.data")
        _, perf_rec = timed(["perf", "record", "-q", "-a", "--call-graph", "dwarf,16384", "-F", str(freq), "-o", pdata,
                             "--", "sleep", str(seconds)])
        size = os.path.getsize(pdata)
        _, perf_script = timed(["sh", "-c", f"perf script --no-inline -i {pdata} > /dev/null 2>&1"])
        stats = subprocess.run(["perf", "report", "-i", pdata, "--stats"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True).stdout
        m = re.search(r"SAMPLE events:\s+(\d+)", stats)
        psamples = int(m.group(1)) if m else 0
    finally:
        for w in load:
            w.kill()
            w.wait()
    return dict(freq=freq, ours=ours, samples=samples, bytes_per=bytes_per, median=median, p90=p90, mean=mean,
                unwound=unwound, perf_rec=perf_rec, perf_script=perf_script, perf_size=size, perf_samples=psamples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seconds", type=int, default=20)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="unwind-bench-")
    bench = subprocess.run([os.path.join(args.build, "bench", "unwind", "unwind-bench")], stdout=subprocess.PIPE,
                           text=True, check=True).stdout
    rows = compare(args.build, tmp, min(args.seconds, 10))
    costs = [cost(args.build, tmp, args.seconds, f) for f in (19, 499)]
    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], stdout=subprocess.PIPE,
                         text=True).stdout.strip()
    L = []
    L.append("# DWARF unwinding: results\n")
    L.append(f"Machine: {os.cpu_count()} CPUs ({cpu}), kernel {os.uname().release}, "
             f"{subprocess.run(['perf', 'version'], stdout=subprocess.PIPE, text=True).stdout.strip()}. "
             f"Command: `bench/unwind/run.py --build {os.path.relpath(args.build, ROOT)} --seconds {args.seconds}` "
             f"(as root; other work on the machine adds noise).\n")
    L.append("## Unwinder CPU per stack (bench/unwind/unwind-bench)\n")
    L.append("```\n" + bench.strip() + "\n```\n")
    L.append("## Debian binaries without frame pointers: otelprofd and `perf record --call-graph dwarf,16384`, "
             "same process, same time, 499 Hz\n")
    L.append("Shares are of samples; \"A in B\": A's samples whose stack B also has. Callers: the stack without "
             "its leaf frame (leaf labels differ by symbol aliases and, under a kernel frame, by one byte).\n")
    L.append("| workload | otelprofd: reach entry | perf: reach entry | whole stack: otelprofd in perf / perf in "
             "otelprofd | callers: otelprofd in perf / perf in otelprofd | caller->callee pairs: otelprofd in perf / "
             "perf in otelprofd |")
    L.append("|---|---|---|---|---|---|")
    for (name, ra, ta, rb, tb, ab, ba, xab, xba, cab, cba, top, na, nb) in rows:
        L.append(f"| {name} | {ra}/{ta} ({100.0 * ra / max(ta, 1):.2f}%) | {rb}/{tb} ({100.0 * rb / max(tb, 1):.2f}%) "
                 f"| {100 * ab:.1f}% / {100 * ba:.1f}% | {100 * xab:.1f}% / {100 * xba:.1f}% "
                 f"| {100 * cab:.1f}% / {100 * cba:.1f}% |")
    L.append("")
    L.append("Hottest stack of each, root first, with its samples in otelprofd and in perf:\n")
    for r in rows:
        L.append(f"- {r[0]}: `{r[11]}`: {r[12]} / {r[13]}")
    L.append("")
    L.append(f"## Cost, system-wide, both cores busy (xz -9 and a python3 loop), {args.seconds} s\n")
    L.append("| rate | otelprofd CPU (all included) | samples | unwound | stack bytes copied per sample | "
             "unwind CPU per sample (median / p90 / mean) | perf record CPU | perf script --no-inline CPU (unwinding, symbols) | "
             "perf samples | perf.data bytes per sample |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for c in costs:
        L.append(f"| {c['freq']} Hz | {c['ours']:.2f} s ({100 * c['ours'] / args.seconds:.1f}% of a CPU) | {c['samples']} "
                 f"| {c['unwound'][0]}/{c['unwound'][1]} | {c['bytes_per']} | < {c['median']} us / < {c['p90']} us / "
                 f"{c['mean']} us | {c['perf_rec']:.2f} s | {c['perf_script']:.2f} s | {c['perf_samples']} | "
                 f"{c['perf_size'] // max(c['perf_samples'], 1)} |")
    print("\n".join(L))


if __name__ == "__main__":
    main()
