#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Integration tests of the symbolizer library through symtool, on programs built by the suite:
inline chains, PIE and non-PIE, dlopen, C++ templates, separate debug files (debuglink and
build-id directory), a binary only visible in another mount namespace, planted FIFO/symlink,
corrupt ELF files (mapped and marked bad, section and DIE-depth bounds), perf maps, kernel symbols,
the module cache bounds (entries and bytes as modules grow) and copies of one build id."""
import hashlib
import http.server
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

SYMTOOL = os.environ["SYMTOOL"]
PROGRAMS = os.environ["SYM_PROGRAMS"]
SOURCES = os.environ["SYM_SOURCES"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    else:
        print("ok:", what)


def marker(source, name):
    with open(os.path.join(SOURCES, source)) as f:
        for n, line in enumerate(f, 1):
            if "@" + name in line:
                return n
    raise KeyError(name)


class Tool:
    def __init__(self, *args):
        self.p = subprocess.Popen([SYMTOOL, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        out = []
        while True:
            line = self.p.stdout.readline()
            if line in (".\n", ""):
                return out
            out.append(line.rstrip("\n"))

    def frame(self, cmd):
        lines = self.ask(cmd)
        frame, result = None, []
        for line in lines:
            fields = line.split("\t")
            kv = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
            if fields[0] == "frame":
                frame = kv
            elif fields[0] == "line":
                result.append(kv)
            elif fields[0] == "error":
                frame = {"error": fields[1]}
        return frame, result

    def stats(self):
        out = {}
        for line in self.ask("stats"):
            out.update({k: int(v) for k, v in (f.split("=") for f in line.split("\t")[1:])})
        return out

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=30)
        check(rc == 0, "symtool exits cleanly (rc=%d)" % rc)


class Program:
    """A test program running until closed; its printed addresses are read from stdout."""

    def __init__(self, argv, wrap=None):
        self.p = subprocess.Popen((wrap or []) + argv, stdout=subprocess.PIPE, text=True)
        self.addr = {}
        deadline = time.time() + 10
        self.lines = []
        while time.time() < deadline:
            line = self.p.stdout.readline()
            if not line or line.strip() == "ready":
                break
            self.lines.append(line)
            if len(line.split()) != 2:
                continue
            k, v = line.split()
            self.addr[k] = int(v, 16) if v.startswith("0x") else v
        self.pid = self.p.pid
        if wrap:
            # The program is the wrapper's child (unshare forks).
            kids = open("/proc/%d/task/%d/children" % (self.pid, self.pid)).read().split()
            self.pid = int(kids[0]) if kids else self.pid

    def close(self):
        self.p.kill()
        self.p.wait()


def build_id_of(path):
    out = subprocess.run(["eu-readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def htlhash_of(path):
    data = open(path, "rb").read()
    n = min(len(data), 4096)
    h = hashlib.sha256(data[:n] + data[len(data) - n:] + len(data).to_bytes(8, "big"))
    return h.hexdigest()[:32]


def check_chain(tool, prog, label, binary):
    frame, lines = tool.frame("user %d %x" % (prog.pid, prog.addr["ret"] - 1))
    names = [l["function"] for l in lines]
    check(names == ["inner", "outer", "main"], "%s: inline chain inner<-outer<-main (got %s)" % (label, names))
    if len(lines) == 3:
        want = [marker("inl.c", "INNER"), marker("inl.c", "OUTER"), marker("inl.c", "MAIN")]
        got = [int(l["line"]) for l in lines]
        check(got == want, "%s: lines %s (got %s)" % (label, want, got))
        check(all(l["file"].endswith("programs/inl.c") for l in lines), "%s: file inl.c" % label)
    check(frame.get("build_id") == build_id_of(binary), "%s: GNU build id" % label)
    check(frame.get("htlhash") == htlhash_of(binary), "%s: htlhash" % label)
    frame, lines = tool.frame("user %d %x" % (prog.pid, prog.addr["leaf"]))
    check(lines and lines[0]["function"] == "leaf" and
          marker("inl.c", "LEAF") <= int(lines[0]["line"]) <= marker("inl.c", "LEAF") + 3,
          "%s: leaf at its definition (got %s)" % (label, lines))
    return frame


def test_pie_nopie_dlopen():
    tool = Tool()
    for name in ("inl-pie", "inl-nopie", "inl-clang"):
        binary = os.path.join(PROGRAMS, name)
        prog = Program([binary, os.path.join(PROGRAMS, "libplug.so")])
        check_chain(tool, prog, name, binary)
        frame, lines = tool.frame("user %d %x" % (prog.pid, prog.addr["plug"] - 1))
        check(lines and lines[0]["function"] == "plug_run" and int(lines[0]["line"]) == marker("plug.c", "PLUG")
              and frame["path"].endswith("libplug.so"), "%s: dlopen'ed plug_run at @PLUG (got %s)" % (name, lines))
        prog.close()
        tool.ask("forget %d" % prog.pid)
    tool.close()


def test_zombie():
    # Exited, not yet reaped: /proc/PID/maps is empty. A lookup that misses (and so reads the maps
    # again) must not leave the process with no mappings: its samples wait for their profile.
    tool = Tool()
    binary = os.path.join(PROGRAMS, "inl-pie")
    prog = Program([binary, os.path.join(PROGRAMS, "libplug.so")])
    check_chain(tool, prog, "zombie, running", binary)
    os.kill(prog.pid, signal.SIGKILL)
    deadline = time.time() + 10
    while time.time() < deadline and open("/proc/%d/stat" % prog.pid).read().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.01)
    for _ in range(6):  # past the quick re-reads
        tool.frame("user %d %x" % (prog.pid, 0x10))
    check_chain(tool, prog, "zombie, exited", binary)
    prog.close()
    tool.close()


def test_cxx():
    tool = Tool()
    prog = Program([os.path.join(PROGRAMS, "cxx")])
    frame, lines = tool.frame("user %d %x" % (prog.pid, prog.addr["ret"] - 1))
    names = [l["function"] for l in lines]
    check(len(lines) == 2 and "shapes::twice<int>(int)" in names[0] and names[1] == "shapes::Box<int>::grow(int)",
          "c++: demangled template chain (got %s)" % names)
    if len(lines) == 2:
        check(int(lines[0]["line"]) == marker("cxx.cpp", "TWICE") and int(lines[1]["line"]) == marker("cxx.cpp", "GROW"),
              "c++: lines @TWICE/@GROW (got %s)" % [l["line"] for l in lines])
        check(lines[1]["system_name"].startswith("_ZN6shapes3BoxIiE4grow"), "c++: system_name stays mangled")
    prog.close()
    tool.close()


def test_rust():
    # Rust names in both manglings, demangled without the legacy hash; file:line of each function.
    for kind, prefix in (("legacy", "_ZN2rs"), ("v0", "_RNv")):
        binary = os.path.join(PROGRAMS, "rs-" + kind)
        if not os.path.exists(binary):
            print("SKIP: no rustc (scripts/install-deps.sh installs Debian's)")
            return
        tool = Tool()
        prog = Program([binary])
        # v0 names an inherent method by its type in angle brackets, as rustc-demangle does.
        spin = "rs::shapes::Grid::spin" if kind == "legacy" else "<rs::shapes::Grid>::spin"
        for key, want, mark in (("spin", spin, "RSPIN"), ("hot", "rs::hot", "RHOT")):
            frame, lines = tool.frame("user %d %x" % (prog.pid, prog.addr[key]))
            line = marker("rs.rs", mark)  # the entry's row may be the first statement's (-O)
            check(len(lines) == 1 and lines[0]["function"] == want and lines[0]["system_name"].startswith(prefix)
                  and lines[0]["file"].endswith("programs/rs.rs") and line <= int(lines[0]["line"]) <= line + 4,
                  "rust %s: %s at rs.rs:%d (got %s)" % (kind, want, line, lines))
        prog.close()
        tool.close()


def test_deep_inline():
    tool = Tool()
    prog = Program([os.path.join(PROGRAMS, "deep")])
    frame, lines = tool.frame("user %d %x" % (prog.pid, prog.addr["ret"] - 1))
    names = [l["function"] for l in lines]
    check(len(names) == 16 and names[0] == "d0" and names[-1] == "main",
          "deep inline chain cut to 16 frames, innermost and outermost kept (got %s)" % names)
    check(tool.stats()["inline_truncated"] == 1, "deep inline chain: inline_truncated counted in symbolizer_stats")
    prog.close()
    tool.close()


def copy_program(tmp, sub, name, program="inl-pie"):
    d = os.path.join(tmp, sub)
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(PROGRAMS, program), os.path.join(d, name))
    return os.path.join(d, name)


def split_debug(binary, debug_file):
    """Move the DWARF of binary into debug_file and strip binary of every symbol."""
    subprocess.run(["objcopy", "--only-keep-debug", binary, debug_file], check=True)
    subprocess.run(["strip", "--strip-all", binary], check=True)


def test_separate_debug(tmp):
    # .gnu_debuglink next to the binary
    binary = copy_program(tmp, "linked", "inl-linked")
    split_debug(binary, binary + ".debug")
    subprocess.run(["objcopy", "--add-gnu-debuglink=" + binary + ".debug", binary], cwd=os.path.dirname(binary),
                   check=True)
    tool = Tool("--debug-dir", os.path.join(tmp, "nothing-here"))
    prog = Program([binary])
    check_chain(tool, prog, "debuglink", binary)
    prog.close()
    tool.close()

    # build-id directory, no debuglink; first without the directory (control), then with it
    binary = copy_program(tmp, "byid", "inl-byid")
    bid = build_id_of(binary)
    dbg = os.path.join(tmp, "debugroot", ".build-id", bid[:2])
    os.makedirs(dbg)
    split_debug(binary, os.path.join(dbg, bid[2:] + ".debug"))
    prog = Program([binary])
    tool = Tool("--debug-dir", os.path.join(tmp, "nothing-here"))
    frame, lines = tool.frame("user %d %x" % (prog.pid, prog.addr["ret"] - 1))
    check(not any(l["function"] == "inner" for l in lines), "stripped without debug file: no DWARF names")
    check(frame.get("build_id") == bid, "stripped binary keeps its build id for the backend")
    tool.close()
    tool = Tool("--debug-dir", os.path.join(tmp, "debugroot"))
    check_chain(tool, prog, "build-id dir", binary)
    tool.close()
    prog.close()


def test_debuglink_huge(tmp):
    # No build id: a .gnu_debuglink candidate is checked by the CRC of its contents; a huge (sparse)
    # one is refused without reading it, counted, and the frame keeps its ELF symbols.
    d = os.path.join(tmp, "nobid")
    os.makedirs(d)
    binary = os.path.join(d, "inl-nobid")
    subprocess.run(["gcc", "-O2", "-g", "-Wl,--build-id=none", os.path.join(SOURCES, "inl.c"), "-o", binary],
                   check=True)
    subprocess.run(["objcopy", "--only-keep-debug", binary, binary + ".debug"], check=True)
    subprocess.run(["strip", "--strip-debug", binary], check=True)
    subprocess.run(["objcopy", "--add-gnu-debuglink=" + binary + ".debug", binary], cwd=d, check=True)
    with open(binary + ".debug", "r+b") as f:
        f.truncate(64 << 30)  # sparse: 64 GiB that would take minutes to CRC
    prog = Program([binary])
    tool = Tool("--debug-dir", os.path.join(tmp, "nothing-here"))
    frame, lines = tool.frame("user %d %x" % (prog.pid, prog.addr["ret"] - 1))
    st = tool.stats()
    check(frame["rc"] == "0" and [l["function"] for l in lines] == ["main"] and st["debuglink_too_big"] == 1,
          "debuglink: a huge candidate is not CRC-checked, counted (%s, %s)" % (lines, st["debuglink_too_big"]))
    tool.close()
    prog.close()


def test_mount_namespace(tmp):
    hidden = os.path.dirname(copy_program(tmp, "hidden", "inl-ns"))
    visible = os.path.join(tmp, "ns-only")
    os.makedirs(visible)
    inner = os.path.join(visible, "inl-ns")
    prog = Program(["sh", "-c", 'mount --bind "$0" "$1" && exec "$1/inl-ns"', hidden, visible],
                   wrap=["unshare", "-m", "--propagation", "private"])
    if not prog.addr:
        print("SKIP: unshare -m failed (no CAP_SYS_ADMIN?)")
        prog.close()
        return
    check(not os.path.exists(inner), "mount ns: the binary's path does not exist on the host")
    for args, label in (([], "map_files"), (["--no-map-files"], "/proc/PID/root")):
        tool = Tool(*args)
        frame = check_chain(tool, prog, "mount ns via " + label, os.path.join(hidden, "inl-ns"))
        check(frame.get("path") == inner, "mount ns: mapping path as the process sees it")
        tool.close()
    prog.close()


def test_planted_files(tmp):
    for kind in ("fifo", "symlink"):
        binary = copy_program(tmp, "planted", "inl-" + kind)
        prog = Program([binary])
        os.unlink(binary)
        if kind == "fifo":
            os.mkfifo(binary)
        else:
            os.symlink("/etc/passwd", binary)
        tool = Tool("--no-map-files")
        start = time.time()
        frame, lines = tool.frame("user %d %x" % (prog.pid, prog.addr["ret"] - 1))
        tool.frame("user %d %x" % (prog.pid, prog.addr["leaf"]))
        st = tool.stats()
        check(time.time() - start < 5 and frame["rc"] == "0" and not lines and frame["mapping"] == "1",
              "planted %s: no hang, frame kept unsymbolized with its mapping" % kind)
        # The failure is this process's (its path names another file), not the mapped file's: it is
        # counted once and marked for this process, and the file itself is not marked bad for others.
        check(st["modules_bad"] == 0 and st["module_open_failed"] == 1,
              "planted %s: counted once for the process, the file not marked bad (%s)" % (kind, st))
        tool.close()
        # map_files still reaches the real (deleted) binary
        tool = Tool()
        check_chain(tool, prog, "deleted binary via map_files", os.path.join(PROGRAMS, "inl-pie"))
        tool.close()
        prog.close()


def test_corrupt_files(tmp):
    src = open(os.path.join(PROGRAMS, "inl-pie"), "rb").read()
    cases = {"empty": b"", "garbage": b"\x7fELF" + bytes(range(256)) * 4, "truncated-header": src[:40],
             "truncated-half": src[: len(src) // 2], "truncated-end": src[:-100]}
    flipped = bytearray(src)
    for i in range(0, 64, 3):
        flipped[i] ^= 0x5A
    cases["flipped-header"] = bytes(flipped)
    tool = Tool()
    for name, data in cases.items():
        path = os.path.join(tmp, "corrupt-" + name)
        open(path, "wb").write(data)
        out = tool.ask("elf %s 1169" % path)
        check(out is not None, "corrupt ELF %s: answered (%s)" % (name, out[:1]))
    tool.close()


MAP_EXEC = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
fd = os.open(sys.argv[1], os.O_RDONLY)
addr = libc.mmap(None, os.fstat(fd).st_size, 1 | 4, 2, fd, 0)  # PROT_READ|PROT_EXEC, MAP_PRIVATE
print("map", hex(addr), flush=True)
print("ready", flush=True)
sys.stdin.read()
"""


def test_bad_file(tmp):
    # A corrupt ELF mapped executable by a process: marked bad (counted), not reopened before the
    # retry time, reopened after it.
    path = os.path.join(tmp, "corrupt-mapped")
    src = open(os.path.join(PROGRAMS, "inl-pie"), "rb").read()
    open(path, "wb").write(b"\x7fELF" + b"\xff" * 60 + src[64:8192])
    helper = subprocess.Popen([sys.executable, "-c", MAP_EXEC, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    addr = int(helper.stdout.readline().split()[1], 16)
    helper.stdout.readline()
    tool = Tool("--bad-retry-ms", "600000")
    for _ in range(3):
        frame, lines = tool.frame("user %d %x" % (helper.pid, addr + 0x100))
    st = tool.stats()
    check(frame["rc"] == "0" and frame["mapping"] == "1" and not lines and st["modules_bad"] == 1 and
          st["module_cache_misses"] == 1 and st["modules_cached"] == 1,
          "bad file: corrupt mapped ELF marked bad once, not reopened before its retry time (%s)" %
          {k: st[k] for k in ("modules_bad", "module_cache_misses", "modules_cached")})
    tool.close()
    tool = Tool("--bad-retry-ms", "1")
    tool.frame("user %d %x" % (helper.pid, addr + 0x100))
    time.sleep(0.05)
    tool.frame("user %d %x" % (helper.pid, addr + 0x100))
    st = tool.stats()
    check(st["modules_bad"] == 2 and st["module_cache_misses"] == 2,
          "bad file: reopened after its retry time (%s)" % {k: st[k] for k in ("modules_bad", "module_cache_misses")})
    tool.close()
    helper.stdin.close()
    helper.wait()

    # Section bounds: a section claiming 2 GiB is refused before libdw maps or inflates it.
    data = bytearray(src)
    shoff, shentsize, shnum = struct.unpack_from("<Q", data, 0x28)[0], data[0x3a], struct.unpack_from("<H", data, 0x3c)[0]
    comment = None
    strndx = struct.unpack_from("<H", data, 0x3e)[0]
    stroff = struct.unpack_from("<Q", data, shoff + strndx * shentsize + 0x18)[0]
    for i in range(shnum):
        name = struct.unpack_from("<I", data, shoff + i * shentsize)[0]
        if data[stroff + name:stroff + name + 9] == b".comment\0":
            comment = shoff + i * shentsize
    struct.pack_into("<Q", data, comment + 0x20, 2 << 30)
    path = os.path.join(tmp, "huge-section")
    open(path, "wb").write(bytes(data))
    tool = Tool()
    out = tool.ask("elf %s 1169" % path)
    check(out == ["error\tFile too large"], "bad file: section over the size bound refused with EFBIG (%s)" % out)

    # DIE depth: 80 nested lexical blocks; the search stops at the bound, counted, the function kept.
    n = 80
    code = ["volatile int sink;", "int main(int argc, char **argv) {", "volatile int v0 = argc;"]
    code += ["{ volatile int v%d = v%d + 1;" % (i, i - 1) for i in range(1, n + 1)]
    code += ['__asm__ volatile(".globl deepest_pc\\ndeepest_pc:");', "sink = v%d;" % n]
    code += ["sink += v%d; }" % i for i in range(n, 0, -1)] + ["return 0;", "}"]
    src = os.path.join(tmp, "blocks.c")
    open(src, "w").write("\n".join(code) + "\n")
    subprocess.run(["gcc", "-O0", "-g", src, "-o", src[:-2]], check=True)
    nm = subprocess.run(["nm", src[:-2]], capture_output=True, text=True).stdout
    pc = int(re.search(r"^([0-9a-f]+) T deepest_pc$", nm, re.M).group(1), 16)
    out = tool.ask("elf %s %x" % (src[:-2], pc))
    check(any(l.startswith("counters\tdie_bound_hit=1\tinline_truncated=0\t") for l in out) and any("function=main\t" in l for l in out),
          "bad file: DIE depth bound hit and counted, function still named (%s)" % out[1:])
    tool.close()


def test_perf_map(tmp):
    prog = subprocess.Popen(["sleep", "60"])
    path = "/tmp/perf-%d.map" % prog.pid
    try:
        with open(path, "w") as f:
            f.write("10000000 100 LazyCompile:~hot /app/a.js:1\n")
        tool = Tool()
        frame, lines = tool.frame("user %d 10000010" % prog.pid)
        check(lines and lines[0]["function"] == "LazyCompile:~hot /app/a.js:1" and frame["module"] == "[jit]",
              "perf map: JIT symbol (got %s)" % lines)
        with open(path, "a") as f:
            f.write("20000000 80 jitted_later\n")
        time.sleep(1.1)
        frame, lines = tool.frame("user %d 20000004" % prog.pid)
        check(lines and lines[0]["function"] == "jitted_later", "perf map: reloaded when it grew (got %s)" % lines)
        check(tool.stats()["perf_map_loads"] == 2, "perf map: read twice")
        tool.close()
    finally:
        os.unlink(path)
        prog.kill()
        prog.wait()


def test_kernel():
    want = None
    with open("/proc/kallsyms") as f:
        for line in f:
            a, t, name = line.split()[:3]
            if name == "schedule" and t in "tT":
                want = int(a, 16)
                break
    tool = Tool()
    if not want:
        print("SKIP: kernel symbols hidden")
        check(tool.stats()["kallsyms_hidden"] in (0, 1), "kallsyms_hidden reported")
    else:
        frame, lines = tool.frame("kernel %x" % (want + 1))
        check(lines and lines[0]["function"] == "schedule" and frame["module"] == "vmlinux", "kernel: schedule")
    tool.close()
    # kptr_restrict: every address reads as zero; reported from the start, lookups stay raw.
    with tempfile.NamedTemporaryFile("w", suffix=".kallsyms") as f:
        f.write("0000000000000000 T _stext\n0000000000000000 t schedule\n")
        f.flush()
        tool = Tool("--kallsyms", f.name)
        frame, lines = tool.frame("kernel ffffffff81000010")
        check(tool.stats()["kallsyms_hidden"] == 1 and not lines and frame["file_address"] == "0xffffffff81000010",
              "kernel: hidden kallsyms reported at once, address kept raw")
        tool.close()


def test_cache(tmp):
    # Two copies of one binary (same build id, different inodes) share one module; a cache of
    # two modules evicts under a third and still answers correctly.
    progs = [Program([copy_program(tmp, "cache", name)]) for name in ("a", "b")]
    progs.append(Program([os.path.join(PROGRAMS, "inl-nopie")]))
    progs.append(Program([os.path.join(PROGRAMS, "cxx")]))
    tool = Tool("--max-modules", "2")
    for _ in range(2):
        for p in progs:
            frame, lines = tool.frame("user %d %x" % (p.pid, p.addr["ret"] - 1))
            check(len(lines) >= 2, "cache: %d symbolized under eviction" % p.pid)
    st = tool.stats()
    check(st["modules_shared_by_build_id"] >= 1, "cache: same build id shared (%s)" % st)
    check(st["modules_cached"] <= 2 and st["modules_evicted"] >= 1, "cache: entry bound held, evictions counted")
    for p in progs:
        tool.ask("forget %d" % p.pid)
        p.close()
    for _ in range(9):
        tool.ask("maintain")
    check(tool.stats()["modules_cached"] == 0, "cache: unreferenced idle modules dropped after exit")
    tool.close()
    tool = Tool("--max-bytes", "1")
    frame, lines = tool.frame("user %d %x" % (os.getpid(), 0))
    tool.close()


def test_shared_copies(tmp):
    # Builds of one build id that differ (stripped, full, stripped of DWARF only) each get a module
    # of their own and their own names: a build id is only a claim, and another file's DWARF is not
    # lent (test_trust.py has the attack). An identical copy shares its module. Each file keeps its
    # own htlhash (it hashes the file's bytes).
    stripped = copy_program(tmp, "copies", "stripped")
    subprocess.run(["strip", "--strip-all", stripped], check=True)
    full = copy_program(tmp, "copies", "full")
    later = copy_program(tmp, "copies", "stripped-later")
    subprocess.run(["strip", "--strip-debug", later], check=True)
    again = copy_program(tmp, "copies", "full-again")
    tool = Tool("--debug-dir", os.path.join(tmp, "nothing-here"))
    progs = {name: Program([path]) for name, path in (("stripped", stripped), ("full", full), ("later", later),
                                                      ("again", again))}
    frame, lines = tool.frame("user %d %x" % (progs["stripped"].pid, progs["stripped"].addr["ret"] - 1))
    check(not lines and frame["htlhash"] == htlhash_of(stripped), "copies: stripped copy first, no lines, its htlhash")
    check_chain(tool, progs["full"], "copies: full copy after a stripped one", full)
    check_chain(tool, progs["again"], "copies: identical copy of the full one", again)
    frame, lines = tool.frame("user %d %x" % (progs["later"].pid, progs["later"].addr["ret"] - 1))
    check(frame["htlhash"] == htlhash_of(later) and frame["build_id"] == build_id_of(full) and
          [l["function"] for l in lines] == ["main"],
          "copies: copy without DWARF names from its own symbols, keeps its own htlhash (%s %s)" % (frame, lines))
    st = tool.stats()
    check(st["modules_shared_by_build_id"] == 1 and st["modules_share_refused"] == 2 and st["modules_cached"] == 3,
          "copies: identical copies share, different builds do not (%s)" % {k: st[k] for k in (
              "modules_shared_by_build_id", "modules_share_refused", "modules_cached")})
    for p in progs.values():
        p.close()
    tool.close()


def lookups(tool, pid, addresses):
    """Symbolize many addresses in batches (symtool answers in order); returns the stats after."""
    for i in range(0, len(addresses), 200):
        batch = addresses[i:i + 200]
        tool.p.stdin.write("".join("user %d %x\n" % (pid, a) for a in batch))
        tool.p.stdin.flush()
        for _ in batch:
            while tool.p.stdout.readline() not in (".\n", ""):
                pass
    return tool.stats()


def test_cache_bytes(tmp):
    # Modules grow as they are used (result cache, libdw's line tables): the byte bound is kept
    # then, by evicting the least recently used other module; a module alone over it is counted.
    src = os.path.join(tmp, "big.c")
    with open(src, "w") as f:
        subprocess.run([sys.executable, os.environ["SYM_GEN_BIG"], "600"], stdout=f, check=True)
    big = os.path.join(tmp, "big")
    subprocess.run(["gcc", "-O2", "-g", src, "-o", big], check=True)
    prog = Program([big])  # prints the addresses of 20 functions
    funcs = sorted(int(line, 16) for line in prog.lines)
    many = list(range(funcs[0], funcs[-1], 23))
    other = Program([os.path.join(PROGRAMS, "inl-nopie")])
    first = ["user %d %x" % (other.pid, other.addr["ret"] - 1), "user %d %x" % (prog.pid, funcs[0])]

    tool = Tool()
    tool.frame(first[0])
    other_bytes = tool.stats()["module_bytes"]
    tool.frame(first[1])
    st0 = tool.stats()
    st1 = lookups(tool, prog.pid, many)
    tool.close()
    check(st0["modules_cached"] == 2 and st1["module_bytes"] > st0["module_bytes"] + (1 << 20),
          "cache bytes: module_bytes rises with lookups (%d -> %d)" % (st0["module_bytes"], st1["module_bytes"]))
    # Room for the big module fully grown and half of the other: the other module must go.
    bound = st1["module_bytes"] - other_bytes // 2
    tool = Tool("--max-bytes", str(bound))
    for cmd in first:
        tool.frame(cmd)
    seen = [tool.stats()]
    for i in range(0, len(many), len(many) // 4):
        seen.append(lookups(tool, prog.pid, many[i:i + len(many) // 4]))
    st = seen[-1]
    check(all(s["module_bytes"] <= bound for s in seen) and seen[0]["modules_cached"] == 2 and
          st["module_bytes"] > seen[0]["module_bytes"] and st["modules_evicted"] >= 1 and
          st["module_bytes_over"] == 0 and st["modules_cached"] == 1,
          "cache bytes: bound %d held as the module grew, LRU module evicted (%s)" %
          (bound, [(s["module_bytes"], s["modules_evicted"], s["modules_cached"]) for s in seen]))
    frame, lines = tool.frame("user %d %x" % (prog.pid, funcs[0]))
    check(lines and lines[-1]["function"] == "f0", "cache bytes: still symbolized under the bound")
    tool.close()
    # A bound the module in use alone exceeds: it stays (the lookup needs it), counted.
    tool = Tool("--max-bytes", str(1 << 20))
    st = lookups(tool, prog.pid, many[:500])
    check(st["module_bytes_over"] >= 1, "cache bytes: a module alone over the bound is counted (%s)" % st["module_bytes_over"])
    tool.close()
    prog.close()
    other.close()


def test_cache_entries(tmp):
    # 70 binaries with their own build ids through a cache of 64 entries (the churn of bench/).
    d = os.path.join(tmp, "churn")
    os.makedirs(d)
    obj = os.path.join(d, "inl.o")
    subprocess.run(["gcc", "-O2", "-g", "-c", os.path.join(SOURCES, "inl.c"), "-o", obj], check=True)
    tool = Tool("--max-modules", "64")
    peak, ok = 0, 0
    for i in range(70):
        binary = os.path.join(d, "b%d" % i)
        subprocess.run(["gcc", obj, "-o", binary, "-Wl,--build-id=0x%040x" % (i + 1)], check=True)
        prog = Program([binary])
        frame, lines = tool.frame("user %d %x" % (prog.pid, prog.addr["ret"] - 1))
        ok += [l["function"] for l in lines] == ["inner", "outer", "main"]
        peak = max(peak, tool.stats()["modules_cached"])
        prog.close()
        tool.ask("forget %d" % prog.pid)
    st = tool.stats()
    check(ok == 70 and peak == 64 and st["modules_evicted"] >= 70 - 64,
          "cache entries: 70 binaries through 64 entries (symbolized %d, peak %d, evicted %d)" %
          (ok, peak, st["modules_evicted"]))
    tool.close()


class Debuginfod:
    """A debuginfod-protocol server on 127.0.0.1: GET /buildid/HEX/debuginfo answers from
    self.files; self.modes[HEX] = "garbage" (200 with junk) or "hang" (never answers)."""

    def __init__(self):
        self.files, self.modes, self.asked, self.last_modified = {}, {}, {}, {}
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                parts = self.path.strip("/").split("/")
                bid = parts[1] if len(parts) == 3 and parts[0] == "buildid" and parts[2] == "debuginfo" else ""
                outer.asked[bid] = outer.asked.get(bid, 0) + 1
                mode = outer.modes.get(bid)
                if mode == "hang":
                    time.sleep(5)
                    return
                body = b"\x7fELF" + os.urandom(5000) if mode == "garbage" else outer.files.get(bid)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                if bid in outer.last_modified:
                    self.send_header("Last-Modified", outer.last_modified[bid])
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def stripped_program(tmp, name, build_id):
    """inl.c built with its own build id; returns (stripped binary, its debug file's bytes)."""
    d = os.path.join(tmp, "dbgd")
    os.makedirs(d, exist_ok=True)
    binary = os.path.join(d, name)
    subprocess.run(["gcc", "-O2", "-g", "-fPIE", "-pie", "-Wl,--build-id=0x%s" % build_id,
                    os.path.join(SOURCES, "inl.c"), "-o", binary], check=True)
    split_debug(binary, binary + ".debug")
    data = open(binary + ".debug", "rb").read()
    os.unlink(binary + ".debug")
    return binary, data


def names_of(tool, prog):
    frame, lines = tool.frame("user %d %x" % (prog.pid, prog.addr["ret"] - 1))
    return [l["function"] for l in lines]


def test_debuginfod(tmp):
    ids = {k: "%02x" % i * 20 for i, k in enumerate(("good", "good2", "garbage", "hang", "missing"), 0xa1)}
    server = Debuginfod()
    progs, debug = {}, {}
    for k, bid in ids.items():
        binary, debug[k] = stripped_program(tmp, "inl-" + k, bid)
        progs[k] = Program([binary])
    server.files[ids["good"]] = debug["good"]
    server.files[ids["good2"]] = debug["good2"]
    server.modes[ids["garbage"]] = "garbage"
    server.modes[ids["hang"]] = "hang"
    cache = os.path.join(tmp, "debuginfod-cache")
    # Room for one debug file (a little more), not two: the second download evicts the first.
    bound = len(debug["good"]) + len(debug["good"]) // 2 + 8192
    env = dict(os.environ, DEBUGINFOD_URLS="http://127.0.0.1:%d" % server.port, DEBUGINFOD_CACHE_PATH=cache)
    saved = os.environ.copy()
    os.environ.update(env)
    try:
        tool = Tool("--debug-dir", os.path.join(tmp, "nothing-here"), "--debuginfod-timeout-ms", "1500",
                    "--debuginfod-cache-bytes", str(bound), "--max-modules", "8")
    finally:
        os.environ.clear()
        os.environ.update(saved)

    # First lookups never wait for the network: ELF symbols only (stripped: none), download queued.
    start = time.time()
    for k in ("hang", "good", "garbage", "missing"):
        check(names_of(tool, progs[k]) in ([], ["main"]), "debuginfod %s: first lookup answers at once" % k)
    check(time.time() - start < 1.0, "debuginfod: first lookups took %.2f s (< 1 s, nothing waits)" % (time.time() - start))
    deadline, names = time.time() + 15, []
    while time.time() < deadline:
        tool.ask("maintain")
        names = names_of(tool, progs["good"])
        if names == ["inner", "outer", "main"]:
            break
        time.sleep(0.1)
    check_chain(tool, progs["good"], "debuginfod (stripped binary, debug file from the server)",
                os.path.join(tmp, "dbgd", "inl-good"))
    # The hanging server is cut at the timeout; garbage is rejected; 404 remembered.
    deadline = time.time() + 10
    while time.time() < deadline:
        tool.ask("maintain")
        names_of(tool, progs["garbage"])  # reopened once its download arrived: rejected then
        st = tool.stats()
        if st["di_timeouts"] and st["di_rejected"] and st["di_not_found"]:
            break
        time.sleep(0.2)
    check(st["di_found"] >= 2 and st["debuginfod_reloaded"] == 2, "debuginfod: found, good and garbage modules reopened (%s)" % st)
    check(st["di_timeouts"] == 1, "debuginfod: hanging server cut at the timeout, counted")
    check(st["di_rejected"] == 1 and names_of(tool, progs["garbage"]) in ([], ["main"]),
          "debuginfod: garbage answer rejected and counted, frame stays unsymbolized")
    check(st["di_not_found"] == 1, "debuginfod: 404 counted")
    # Negative results are remembered: reopening the module (forget + evict) does not ask again.
    asked = dict(server.asked)
    for k in ("missing", "garbage", "hang"):
        tool.ask("forget %d" % progs[k].pid)
    for _ in range(9):
        tool.ask("maintain")
    for k in ("missing", "garbage", "hang"):
        names_of(tool, progs[k])
    st = tool.stats()
    check(server.asked == asked and st["di_negative_hits"] >= 3,
          "debuginfod: failed build ids not asked again (%s -> %s, hits %d)" % (asked, server.asked, st["di_negative_hits"]))
    # A second download makes the cache exceed its bound: the oldest file goes.
    names_of(tool, progs["good2"])
    deadline = time.time() + 10
    # good, garbage, good2 downloaded; the cache is scanned right after each download
    while time.time() < deadline and (tool.stats()["di_found"] < 3 or not tool.stats()["di_cache_evicted"]):
        time.sleep(0.1)
        tool.ask("maintain")
    st = tool.stats()
    check(st["di_cache_evicted"] >= 1 and st["di_cache_bytes"] <= bound,
          "debuginfod: cache held to %d bytes (%s)" % (bound, {k: v for k, v in st.items() if "cache" in k}))
    start = time.time()
    tool.close()
    check(time.time() - start < 5, "debuginfod: shutdown does not wait for a download")
    server.close()

    # Server down: counted, nothing hangs.
    os.environ.update(DEBUGINFOD_URLS="http://127.0.0.1:%d" % server.port, DEBUGINFOD_CACHE_PATH=cache + "-2")
    try:
        tool = Tool("--debug-dir", os.path.join(tmp, "nothing-here"))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    names_of(tool, progs["good2"])
    deadline = time.time() + 10
    while time.time() < deadline and not tool.stats()["di_failed"]:
        time.sleep(0.1)
        tool.ask("maintain")
    check(tool.stats()["di_failed"] == 1, "debuginfod: server down counted as failed")
    tool.close()
    for p in progs.values():
        p.close()


def test_debuginfod_old_package(tmp):
    # libdebuginfod dates a download by the server's Last-Modified; the cache is ordered by local
    # use, so a fresh download of an old package is not the first evicted.
    ids = {"recent": "c1" * 20, "old": "c2" * 20}
    server = Debuginfod()
    progs, debug = {}, {}
    for k, bid in ids.items():
        binary, debug[k] = stripped_program(tmp, "inl-lm-" + k, bid)
        progs[k] = Program([binary])
        server.files[bid] = debug[k]
    server.last_modified[ids["old"]] = "Mon, 01 Jan 2001 00:00:00 GMT"
    cache = os.path.join(tmp, "debuginfod-cache-lm")
    bound = max(len(d) for d in debug.values()) * 3 // 2  # one file (by size or blocks), not two
    saved = os.environ.copy()
    os.environ.update(DEBUGINFOD_URLS="http://127.0.0.1:%d" % server.port, DEBUGINFOD_CACHE_PATH=cache)
    try:
        tool = Tool("--debug-dir", os.path.join(tmp, "nothing-here"), "--debuginfod-cache-bytes", str(bound))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    for k in ("recent", "old"):
        deadline = time.time() + 15
        while time.time() < deadline and names_of(tool, progs[k]) != ["inner", "outer", "main"]:
            time.sleep(0.1)
            tool.ask("maintain")
        check(names_of(tool, progs[k]) == ["inner", "outer", "main"], "debuginfod Last-Modified: %s symbolized" % k)
    # The cache is trimmed right after a download, while lookups may already use the file.
    deadline = time.time() + 10
    while time.time() < deadline and not tool.stats()["di_cache_evicted"]:
        time.sleep(0.1)
        tool.ask("maintain")
    kept = {k: os.path.exists(os.path.join(cache, bid, "debuginfo")) for k, bid in ids.items()}
    st = tool.stats()
    check(kept == {"recent": False, "old": True} and st["di_cache_evicted"] >= 1 and server.asked[ids["old"]] == 1,
          "debuginfod Last-Modified: the earlier download evicted, not the old-dated fresh one (%s, evicted %d, asked %s)"
          % (kept, st["di_cache_evicted"], server.asked))
    tool.close()
    server.close()
    for p in progs.values():
        p.close()


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (map_files, mount namespaces)")
        return 77
    with tempfile.TemporaryDirectory(prefix="otelprof-sym-") as tmp:
        test_pie_nopie_dlopen()
        test_zombie()
        test_cxx()
        test_rust()
        test_deep_inline()
        test_separate_debug(tmp)
        test_debuglink_huge(tmp)
        test_mount_namespace(tmp)
        test_planted_files(tmp)
        test_corrupt_files(tmp)
        test_bad_file(tmp)
        test_perf_map(tmp)
        test_kernel()
        test_cache(tmp)
        test_cache_bytes(tmp)
        test_shared_copies(tmp)
        test_cache_entries(tmp)
        test_debuginfod(tmp)
        test_debuginfod_old_package(tmp)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
