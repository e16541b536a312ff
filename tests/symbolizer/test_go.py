#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Go symbolization from .gopclntab (suite symbolizer).

The Go workload programs/go/gohot.go is built full, stripped (-s -w) and as a (stripped) PIE. For
addresses spread over each binary's text and for every address of its main.* functions:
- the outermost function and the innermost file:line agree with `go tool addr2line` on the same
  binary (which reads the pclntab too; it cannot find a PIE's, so PIEs are checked against the
  symbol table of the unstripped PIE instead: names only);
- every frame is of kind go, and the mapping's Go build id is `go tool buildid`'s;
- inlined frames (main.inner inside main.outer) name the call site the compiler reports in its own
  inlining decisions (go build -gcflags=-m), and the inlined body's line;
- runtime.goexit, runtime.mstart and runtime.rt0_go are top frames, main.* functions are not.
"""
import os
import re
import subprocess
import sys

SYMTOOL = os.environ["SYMTOOL"]
PROGRAMS = os.environ["SYM_PROGRAMS"]
SOURCE = os.path.join(os.environ["SYM_SOURCES"], "go", "gohot.go")
GO = os.environ.get("GO", "go")
SPREAD = 600  # addresses spread evenly over .text


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def marker_lines():
    """Line numbers of the LINE:name markers of the source."""
    lines = {}
    with open(SOURCE) as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"// LINE:(\w+)", text)
            if m:
                lines[m.group(1)] = n
    return lines


def text_section(path):
    out = subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.replace("[ ", "[").split()
        if len(f) > 5 and f[1] == ".text":
            return int(f[3], 16), int(f[5], 16)
    fail(f"{path}: no .text")


def symbolize(path, addrs):
    """symtool's frames for addrs: {addr: {"kind", "lines": [(function, file, line)], "top", "go_build_id"}}."""
    cmds = "".join("elfs %s %s\n" % (path, " ".join("%x" % a for a in addrs[i:i + 300]))
                   for i in range(0, len(addrs), 300))
    out = subprocess.run([SYMTOOL], input=cmds, capture_output=True, text=True, check=True).stdout
    frames, cur, module, queue = {}, None, {}, list(addrs)
    for line in out.splitlines():
        f = line.split("\t")
        kv = dict(x.split("=", 1) for x in f[1:] if "=" in x)
        if f[0] == "module":
            module = kv
        elif f[0] == "frame":
            cur = {"kind": kv["kind"], "lines": [], "module": module}
            frames[queue.pop(0)] = cur
        elif f[0] == "line":
            cur["lines"].append((kv["function"], kv["file"], int(kv["line"])))
        elif f[0] == "go_top":
            cur["top"] = f[1] == "1"
        elif f[0] == "error":
            fail(f"symtool: {line}")
    if queue:
        fail(f"symtool answered {len(addrs) - len(queue)} of {len(addrs)} addresses")
    return frames


def addr2line(path, addrs):
    out = subprocess.run([GO, "tool", "addr2line", path], input="".join("0x%x\n" % a for a in addrs),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    res = {}
    for i, a in enumerate(addrs):
        name, pos = out[2 * i], out[2 * i + 1]
        file, _, line = pos.rpartition(":")
        # Past a function's last table entry (its padding) addr2line says "?:-1" or ":-1": unknown.
        res[a] = (name, "" if file == "?" else file, max(int(line), 0))
    return res


def nm_functions(path):
    """Text symbols of an unstripped binary, by address."""
    out = subprocess.run([GO, "tool", "nm", "-n", "-size", path], capture_output=True, text=True,
                         check=True).stdout
    syms = []
    for line in out.split("\n"):
        f = line.split()
        if len(f) >= 4 and f[2] in ("T", "t"):
            syms.append((int(f[0], 16), int(f[1]), f[3]))
    return syms


def inlining_report():
    """(callee, call line) pairs the compiler inlined into main.* (go build -gcflags=-m)."""
    r = subprocess.run([GO, "build", "-gcflags=-m", "-o", os.devnull, SOURCE], capture_output=True, text=True)
    pairs = set()
    for line in (r.stdout + r.stderr).splitlines():
        m = re.search(r"gohot\.go:(\d+):\d+: inlining call to (\S+)", line)
        if m:
            name = m.group(2)
            pairs.add((name if "." in name else "main." + name, int(m.group(1))))
    return pairs


def check_binary(name, reference, marks, inlined, nm_syms=None):
    path = os.path.join(PROGRAMS, name)
    start, size = text_section(path)
    addrs = sorted({start + i * size // SPREAD for i in range(SPREAD)})
    syms = nm_syms if nm_syms is not None else nm_functions(os.path.join(PROGRAMS, reference))
    mains = [s for s in syms if s[2].startswith("main.")]
    for addr, sz, _ in mains:
        addrs += range(addr, addr + sz)
    addrs = sorted(set(addrs))
    frames = symbolize(path, addrs)
    build_id = subprocess.run([GO, "tool", "buildid", path], capture_output=True, text=True,
                              check=True).stdout.strip()
    module = next(iter(frames.values()))["module"]
    if module.get("go") != "1" or module.get("go_build_id") != build_id:
        fail(f"{name}: module go={module.get('go')} go_build_id={module.get('go_build_id')}, buildid says {build_id}")

    compared = mismatches = 0
    if nm_syms is None:
        want = addr2line(path, addrs)
        for a in addrs:
            w, f = want[a], frames[a]
            if w[0] == "?":
                continue
            compared += 1
            got = (f["lines"][-1][0], f["lines"][0][1], f["lines"][0][2]) if f["lines"] else None
            if f["kind"] != "go" or got != w:
                mismatches += 1
                if mismatches <= 10:
                    print(f"  {name} 0x{a:x}: addr2line {w}, ours {f['kind']} {f['lines']}")
    else:
        # Names only: the function whose symbol holds the address.
        by_addr = sorted(syms)
        for a in addrs:
            holder = [s for s in by_addr if s[0] <= a < s[0] + max(s[1], 1)]
            # The symbol table names assembly functions with their ABI (.abi0), and the pclntab
            # shortens array types in generated names ("[...]"): those are left out.
            if not holder or "[" in holder[-1][2]:
                continue
            compared += 1
            f = frames[a]
            want = holder[-1][2].removesuffix(".abi0")
            if f["kind"] != "go" or not f["lines"] or f["lines"][-1][0] != want:
                mismatches += 1
                if mismatches <= 10:
                    print(f"  {name} 0x{a:x}: symbol {holder[-1][2]}, ours {f['kind']} {f['lines']}")
    print(f"{name}: {compared} addresses compared, {mismatches} mismatches")
    if mismatches or compared < SPREAD // 2:
        fail(f"{name}: {mismatches} mismatches of {compared}")

    # Inlined frames: main.inner in main.outer at the reported call site, its body's line innermost.
    seen_inline = 0
    for a in addrs:
        lines = frames[a]["lines"]
        for callee, caller in zip(lines, lines[1:]):
            if caller[0].startswith("main.") or callee[0].startswith("main."):
                if (callee[0], caller[2]) not in inlined:
                    fail(f"{name} 0x{a:x}: inline frame {callee[0]} at line {caller[2]} not in the compiler's "
                         f"report {sorted(inlined)}")
        if len(lines) >= 2 and lines[0][0] == "main.inner" and lines[1][0] == "main.outer":
            seen_inline += 1
            if lines[0][2] != marks["inner"] or lines[1][2] != marks["call"]:
                fail(f"{name} 0x{a:x}: inlined chain {lines}, want inner:{marks['inner']} call:{marks['call']}")
    if not seen_inline:
        fail(f"{name}: no address of main.outer shows main.inner inlined")
    hot = [a for a in addrs if frames[a]["lines"] and frames[a]["lines"][0][0] == "main.hotLoop" and
           frames[a]["lines"][0][2] == marks["hot"]]
    if not hot:
        fail(f"{name}: main.hotLoop's loop line {marks['hot']} never seen")

    # Top frames: where Go's traceback ends.
    tops = {s[2]: s[0] for s in syms if s[2] in ("runtime.goexit.abi0", "runtime.mstart.abi0",
                                                  "runtime.rt0_go.abi0", "main.main", "main.hotLoop")}
    top_frames = symbolize(path, list(tops.values()))
    for sym, addr in tops.items():
        want_top = sym.startswith("runtime.")
        if top_frames[addr].get("top") != want_top:
            fail(f"{name}: {sym} top frame {top_frames[addr].get('top')}, want {want_top}")
    print(f"{name}: {seen_inline} inlined addresses, {len(hot)} on the hot line, top frames {sorted(tops)}")


def main():
    marks = marker_lines()
    inlined = inlining_report()
    if ("main.inner", marks["call"]) not in inlined:
        fail(f"the compiler did not inline main.inner at line {marks['call']}: {sorted(inlined)}")
    check_binary("gohot", "gohot", marks, inlined)
    check_binary("gohot-stripped", "gohot", marks, inlined)
    check_binary("gohot-pie", None, marks, inlined, nm_syms=nm_functions(os.path.join(PROGRAMS, "gohot-pie-full")))
    print("ok")


if __name__ == "__main__":
    main()
