#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Symbolizer benchmarks (run as root from the repository root after scripts/build.sh build):
  python3 bench/symbolizer/bench.py [--big-functions N] [--many-units N] [--cold-binary EXE] [--churn N]
warm lookups/s (bench-warm.c, one core), cold first stack in a big -O2 -g binary, memory per cached
module, and the cache bound under a churn of distinct binaries (symtool with --max-modules 64)."""
import argparse
import os
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
SYMTOOL = os.path.join(BUILD, "tests", "symbolizer", "symtool")
HERE = os.path.dirname(os.path.abspath(__file__))


def sh(*args, **kw):
    return subprocess.run(args, check=True, **kw)


class Tool:
    def __init__(self, *args):
        self.p = subprocess.Popen(["taskset", "-c", "0", SYMTOOL, *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)

    def ask(self, cmds):
        self.p.stdin.write("".join(c + "\n" for c in cmds))
        self.p.stdin.flush()
        out, done = [], 0
        while done < len(cmds):
            line = self.p.stdout.readline()
            if line == ".\n":
                done += 1
            else:
                out.append(line)
        return out

    def status(self, key):
        for line in open("/proc/%d/status" % self.p.pid):
            if line.startswith(key):
                return int(line.split()[1])

    def stats(self):
        out = {}
        for line in self.ask(["stats"]):
            out.update({k: int(v) for k, v in (f.strip().split("=") for f in line.split("\t")[1:])})
        return out

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def start(binary):
    p = subprocess.Popen([binary], stdout=subprocess.PIPE, text=True)
    addrs = []
    for line in p.stdout:
        if line.strip() == "ready":
            break
        addrs.append(int(line.split()[-1], 16))
    return p, addrs


def warm(tmp):
    exe = os.path.join(tmp, "bench-warm")
    # -g: the hot addresses are in bench-warm itself, which then has DWARF lines and inlines to find.
    sh("gcc", "-O2", "-g", "-I", os.path.join(ROOT, "symbolizer"), os.path.join(HERE, "bench-warm.c"),
       os.path.join(BUILD, "symbolizer", "libotelprof-symbolizer.a"), "-o", exe,
       "-ldw", "-lelf", "-ldebuginfod", "-liberty", "-lz")
    # 32768: more hot addresses than a module's result cache holds (16384 slots at most).
    for distinct in (256, 4096, 32768):
        sh("taskset", "-c", "0", exe, str(distinct), "5000000")


def build_single(tmp, functions):
    """Worst case: one huge compile unit (gen-big.py)."""
    src, exe = os.path.join(tmp, "big.c"), os.path.join(tmp, "big")
    with open(src, "w") as f:
        sh("python3", os.path.join(HERE, "gen-big.py"), str(functions), stdout=f)
    t = time.time()
    sh("gcc", "-O2", "-g", src, "-o", exe)
    print("cold: built %s (one CU, %d functions, %.1f MB) in %.0f s" %
          (exe, functions, os.path.getsize(exe) / 1e6, time.time() - t))
    return exe


def build_many(tmp, units, per_unit):
    """Shaped like a real program: many compile units (gen-many.py), built with make -j2."""
    d = os.path.join(tmp, "many")
    sh("python3", os.path.join(HERE, "gen-many.py"), d, str(units), str(per_unit))
    t = time.time()
    sh("make", "-s", "-j2", "-C", d)
    exe = os.path.join(d, "many")
    print("cold: built %s (%d CUs x %d functions, %.1f MB) in %.0f s" %
          (exe, units + 1, per_unit, os.path.getsize(exe) / 1e6, time.time() - t))
    return exe


def cold(exe):
    """First stack (the addresses the program prints, +20 bytes each) through a fresh symtool that
    has finished starting (kallsyms read) before the clock starts: page cache dropped, then warm."""
    p, addrs = start(exe)
    for run in range(3):
        sh("sync")
        tool = Tool()
        tool.ask(["stats"])  # startup (kallsyms) is not part of the first stack
        if run == 0:
            open("/proc/sys/vm/drop_caches", "w").write("3\n")
        rss0 = tool.status("VmRSS")
        t = time.perf_counter()
        out = tool.ask(["user %d %x" % (p.pid, a + 20) for a in addrs])
        dt = time.perf_counter() - t
        named = sum(1 for l in out if l.startswith("line"))
        st = tool.stats()
        print("cold%s: first stack of %d frames (%d lines) in %.1f ms; module accounts %d KB, RSS +%d KB; "
              "CUs read by libdw %d" % (" (page cache dropped)" if run == 0 else "", len(addrs), named, dt * 1e3,
                                        st["module_bytes"] // 1024, tool.status("VmRSS") - rss0,
                                        st["lines_by_libdw"]))
        tool.close()
    p.kill()
    p.wait()


def churn(tmp, n, max_bytes):
    src = os.path.join(tmp, "tiny.c")
    open(src, "w").write('#include <stdio.h>\n#include <unistd.h>\n__attribute__((noinline)) int work(int x) '
                         '{ return x * 3; }\nint main(void) { printf("%p\\nready\\n", (void *)work); '
                         'fflush(stdout); pause(); return work(1); }\n')
    obj = os.path.join(tmp, "tiny.o")
    sh("gcc", "-O2", "-g", "-c", src, "-o", obj)
    tool = Tool("--max-modules", "64", "--max-bytes", str(max_bytes))
    t = time.time()
    peak = peak_bytes = 0
    for i in range(n):
        exe = os.path.join(tmp, "tiny%d" % i)
        sh("gcc", obj, "-o", exe, "-Wl,--build-id=0x%032x" % (i + 1))
        p, addrs = start(exe)
        tool.ask(["user %d %x" % (p.pid, addrs[0])])
        p.kill()
        p.wait()
        tool.ask(["forget %d" % p.pid] + (["maintain"] if i % 10 == 9 else []))
        os.unlink(exe)
        st = tool.stats()
        peak = max(peak, st["modules_cached"])
        peak_bytes = max(peak_bytes, st["module_bytes"])
    st = tool.stats()
    print("churn: %d distinct binaries in %.0f s; max 64 modules, %d KB: peak %d cached, %d KB; now %d (%d KB), "
          "%d evicted, %d over the byte bound, symtool VmHWM %d KB" %
          (n, time.time() - t, max_bytes // 1024, peak, peak_bytes // 1024, st["modules_cached"],
           st["module_bytes"] // 1024, st["modules_evicted"], st["module_bytes_over"], tool.status("VmHWM")))
    tool.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--big-functions", type=int, default=4000, help="one-CU binary (0: skip)")
    ap.add_argument("--many-units", type=int, default=480, help="many-CU binary, 60 functions each (0: skip)")
    ap.add_argument("--cold-binary", action="append", default=[], help="also measure this program "
                    "(one that prints addresses, then 'ready', like gen-big/gen-many output)")
    ap.add_argument("--churn", type=int, default=1000)
    ap.add_argument("--churn-bytes", type=int, default=1 << 20, help="the churn's module byte bound")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="otelprof-bench-") as tmp:
        warm(tmp)
        for exe in a.cold_binary:
            cold(exe)
        if a.many_units:
            cold(build_many(tmp, a.many_units, 60))
        if a.big_functions:
            cold(build_single(tmp, a.big_functions))
        if a.churn:
            churn(tmp, a.churn, a.churn_bytes)


if __name__ == "__main__":
    main()
