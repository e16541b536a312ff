#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What a smaller symbol cache costs in symbolization, on this host: one otelprofd per --symbol-cache
size, all at once over the same seconds of the whole host (so they see the same work), each writing a
pprof file; then, per size, weighted by samples: the frames named, the frames with a source line, the
inline frames, the modules served by ELF symbols only (the cheaper tier), and the daemon's peak RSS.

Usage (as root, after scripts/build.sh build):
  bench/memory/symbol_quality.py --build build [--sizes 128MiB,64MiB,32MiB,16MiB] [--seconds 30]
      [--freq 99] [--workload]
--workload also runs bench/workloads/cpu_bench on both CPUs meanwhile (a known program among the host's).
"""
import argparse
import gzip
import os
import re
import signal
import subprocess
import sys
import tempfile
import time



def fields(buf):
    """(field number, wire type, value) of a protobuf message: ints for varints, bytes for the rest."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            value, i = int.from_bytes(buf[i:i + n], "little"), i + n
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def ints(wire, value):
    """A repeated integer field's values, packed or not."""
    if wire == 0:
        return [value]
    out, i = [], 0
    while i < len(value):
        v, i = varint(value, i)
        out.append(v)
    return out


def stacks(path):
    """[(count, [[(function, line) innermost first] per location, leaf first])] of a gzipped pprof file
    (read here: protoc refuses the file when a process name is not UTF-8)."""
    strings, functions, locations, samples = [], {}, {}, []
    for number, wire, value in fields(gzip.open(path).read()):
        if number == 6:
            strings.append(value.decode("utf-8", "replace"))
        elif number == 5:
            f = {n: v for n, _, v in fields(value)}
            functions[f.get(1, 0)] = f.get(2, 0)
        elif number == 4:
            loc, lines = 0, []
            for n, _, v in fields(value):
                if n == 1:
                    loc = v
                elif n == 4:
                    line = {k: x for k, _, x in fields(v)}
                    lines.append((line.get(1, 0), line.get(2, 0)))
            locations[loc] = lines
        elif number == 2:
            ids, vals = [], []
            for n, w, v in fields(value):
                if n == 1:
                    ids += ints(w, v)
                elif n == 2:
                    vals += ints(w, v)
            samples.append((vals[0] if vals else 0, ids))
    return [(count, [[(strings[functions.get(fid, 0)], line) for fid, line in locations.get(i, [])]
                     for i in ids]) for count, ids in samples]


def hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def quality(path):
    """Samples, and per frame (weighted by samples): named, with a line, inline (not a location's last)."""
    samples = frames = named = lined = inline = 0
    for count, locations in stacks(path):
        samples += count
        for lines in locations:
            for i, (function, line) in enumerate(lines):
                frames += count
                named += count * bool(function) * (not function.startswith("0x") and "+0x" not in function)
                lined += count * (line > 0)
                inline += count * (i < len(lines) - 1)
    return samples, frames, named, lined, inline


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="128MiB,64MiB,32MiB,16MiB")
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--freq", type=int, default=99)
    ap.add_argument("--workload", action="store_true")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="otelprofd-symq-")
    otelprofd = os.path.join(args.build, "daemon", "otelprofd")
    work = None
    if args.workload:
        work = subprocess.Popen([os.path.join(args.build, "bench", "cpu_bench"), "2", "1000000"],
                                stdout=subprocess.DEVNULL)
    runs = []
    for size in args.sizes.split(","):
        out = os.path.join(tmp, f"{size}.pb.gz")
        log = open(os.path.join(tmp, f"{size}.log"), "w")
        cmd = [otelprofd, "-F", str(args.freq), "-d", "0", "--symbol-cache", size, "-o", out]
        print("$", " ".join(cmd), file=sys.stderr, flush=True)
        runs.append((size, out, log, subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)))
    peak = {}
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        for size, _, _, p in runs:
            peak[size] = max(peak.get(size, 0), hwm_kib(p.pid))
        time.sleep(0.5)
    for size, _, _, p in runs:
        peak[size] = max(peak.get(size, 0), hwm_kib(p.pid))
        p.send_signal(signal.SIGTERM)
    for _, _, log, p in runs:
        p.wait(timeout=120)
        log.close()
    if work:
        work.kill()
        work.wait()
    print("| --symbol-cache | peak RSS MiB | samples | frames per sample | frames named | frames with a source line "
          "| inline frames | modules served by ELF symbols only |")
    print("|---|---|---|---|---|---|---|---|")
    for size, out, log, _ in runs:
        samples, frames, named, lined, inline = quality(out)
        text = open(log.name).read()
        tier = len(re.findall(r"with its ELF symbols only", text))
        print(f"| {size} | {peak[size] / 1024:.1f} | {samples} | {frames / max(samples, 1):.1f} | "
              f"{100 * named / max(frames, 1):.1f}% | "
              f"{100 * lined / max(frames, 1):.1f}% | {100 * inline / max(frames, 1):.1f}% | {tier} |")


if __name__ == "__main__":
    main()
