#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the symbolizer trusts, tested with processes of an unprivileged user (nobody) and root,
through symtool: a build id is only a claim (a program carrying another's must not lend it names
or DWARF, whichever runs first), and a perf map in everyone's /tmp is read only when it is a regular
file of the process's user, reached without symbolic links, within the size bounds."""
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import test_symbolizer as ts
from test_symbolizer import Program, Tool, check

NOBODY = 65534
AS_NOBODY = ["runuser", "-u", "nobody", "--"]


def stop(prog):
    """Kill a Program and, when wrapped by runuser, the program itself (runuser does not pass SIGKILL on)."""
    if prog.pid != prog.p.pid:
        try:
            os.kill(prog.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    prog.close()


def uid_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Uid:"):
                return int(line.split()[2])
    return -1


def names_at(tool, pid, address):
    frame, lines = tool.frame("user %d %x" % (pid, address))
    return [l["function"] for l in lines]


def program_copies(tmp):
    """The poisoning programs, copied where nobody can run them."""
    d = os.path.join(tmp, "poison")
    os.makedirs(d)
    os.chmod(tmp, 0o755)
    os.chmod(d, 0o755)
    for name in ("victim", "attacker", "attacker-dwarf"):
        shutil.copy(os.path.join(ts.PROGRAMS, name), d)
    return lambda name: os.path.join(d, name)


def test_poisoned_build_id(tmp):
    path = program_copies(tmp)
    check(ts.build_id_of(path("victim")) == ts.build_id_of(path("attacker")) == ts.build_id_of(path("attacker-dwarf")),
          "poison: the attacker carries the victim's build id")

    # The attacker runs first, as nobody, and is symbolized (its own names are right for it).
    attacker = Program([path("attacker")], wrap=AS_NOBODY)
    check(uid_of(attacker.pid) == NOBODY, "poison: attacker runs as nobody")
    tool = Tool()
    got = names_at(tool, attacker.pid, attacker.addr["hot"])
    check(got == ["INJECTED_BY_ATTACKER"], "poison: the attacker's own frame names its symbol (got %s)" % got)
    victim = Program([path("victim")])
    got = names_at(tool, victim.pid, victim.addr["hot"])
    check(got == ["victim_hot"], "poison: the victim run later by root keeps its own name (got %s)" % got)
    st = tool.stats()
    check(st["modules_shared_by_build_id"] == 0 and st["modules_share_refused"] == 1 and st["modules_cached"] == 2,
          "poison: sharing refused and counted (%s)" % {k: st[k] for k in (
              "modules_shared_by_build_id", "modules_share_refused", "modules_cached")})

    # The other order: the victim is cached first; an attacker with DWARF must not replace its
    # module (a copy with DWARF used to take over a stripped one of the same build id).
    tool.close()
    tool = Tool()
    got = names_at(tool, victim.pid, victim.addr["hot"])
    check(got == ["victim_hot"], "poison: victim first (got %s)" % got)
    dwarf = Program([path("attacker-dwarf")], wrap=AS_NOBODY)
    got = names_at(tool, dwarf.pid, dwarf.addr["hot"])
    check(got and got[0] == "INJECTED_BY_ATTACKER", "poison: the DWARF attacker names itself (got %s)" % got)
    got = names_at(tool, victim.pid, victim.addr["hot"] + 4)
    check(got == ["victim_hot"], "poison: the victim's module is not taken over by the attacker's DWARF (got %s)" % got)
    check(tool.stats()["modules_share_refused"] == 1, "poison: refusal counted")
    tool.close()
    for p in (attacker, victim, dwarf):
        stop(p)


def test_identical_copies(tmp):
    # Identical copies share a module only when the cached one is root's and writable by root alone
    # (nobody else can change the bytes that were compared): a copy owned by nobody seen first is
    # not lent to root's copy, which then serves a third identical copy.
    d = os.path.join(tmp, "ident")
    os.makedirs(d)
    files = {}
    for name in ("nobody", "root", "root2", "groupw"):
        files[name] = os.path.join(d, name)
        shutil.copy(os.path.join(ts.PROGRAMS, "victim"), files[name])
    os.chown(files["nobody"], NOBODY, NOBODY)
    os.chmod(files["groupw"], 0o775)
    progs = {name: Program([path]) for name, path in files.items()}
    tool = Tool()
    for name in ("nobody", "groupw", "root", "root2"):
        got = names_at(tool, progs[name].pid, progs[name].addr["hot"])
        check(got == ["victim_hot"], "copies: %s copy symbolized (got %s)" % (name, got))
    st = tool.stats()
    # groupw: refused (nobody's is not shareable); root: refused (neither is); root2: shares root's.
    check(st["modules_cached"] == 3 and st["modules_shared_by_build_id"] == 1 and st["modules_share_refused"] == 2,
          "copies: only a root-owned, root-only-writable module is shared (%s)" % {k: st[k] for k in (
              "modules_cached", "modules_shared_by_build_id", "modules_share_refused")})
    tool.close()
    for p in progs.values():
        stop(p)


SECRET = "10000000 100 SECRET_LINE_OF_A_ROOT_ONLY_FILE\n"


def perf_map_of(pid):
    return "/tmp/perf-%d.map" % pid


def shell(script, user=True):
    """A shell (as nobody unless user is False) that runs script with $$ its pid, says ready, then sleeps.
    Returned once the shell is sleep: asked while it still ran sh, the symbolizer would see the exec
    as another program and retire the process (it did in one CI run)."""
    prog = Program(["sh", "-c", script + "; echo ready; exec sleep 120"], wrap=AS_NOBODY if user else None)
    deadline = time.time() + 10
    while time.time() < deadline:
        with open("/proc/%d/comm" % prog.pid) as f:
            if f.read().strip() == "sleep":
                break
        time.sleep(0.01)
    return prog


def jit_names(tool, pid, address=0x10000010):
    frame, lines = tool.frame("user %d %x" % (pid, address))
    return [l["function"] for l in lines]


def test_perf_map_trust(tmp):
    secret = os.path.join(tmp, "secret")
    with open(secret, "w") as f:
        f.write(SECRET)
    os.chmod(secret, 0o600)
    progs, tool = [], Tool()
    try:
        # Control: nobody's own map is read (owned by its euid).
        own = shell("echo '10000000 100 own_jit_code' > /tmp/perf-$$.map")
        progs.append(own)
        got = jit_names(tool, own.pid)
        check(got == ["own_jit_code"], "perf map: a user's own map is read (got %s, %s)" % (got, tool.stats()))

        # nobody links its map to a root-only file; a hard link (fs.protected_hardlinks off) made
        # for it; a map nobody planted for a root process; a FIFO nobody never writes.
        link = shell("ln -s %s /tmp/perf-$$.map" % secret)
        hard = shell(":")
        os.link(secret, perf_map_of(hard.pid))
        planted = shell(":", user=False)
        subprocess.run(AS_NOBODY + ["sh", "-c", "echo '10000000 100 FORGED' > %s" % perf_map_of(planted.pid)],
                       check=True)
        fifo = shell("mkfifo /tmp/perf-$$.map")
        progs += [link, hard, planted, fifo]
        for name, p in (("symlink", link), ("hard link", hard), ("another user's file", planted), ("FIFO", fifo)):
            started = time.time()
            got = jit_names(tool, p.pid)
            check(not got and time.time() - started < 5, "perf map: %s refused at once (got %s)" % (name, got))
        st = tool.stats()
        check(st["perf_maps_refused"] == 4 and st["perf_map_loads"] == 1,
              "perf map: refusals counted (%s)" % {k: st[k] for k in ("perf_maps_refused", "perf_map_loads")})
        time.sleep(1.1)
        jit_names(tool, link.pid)
        check(tool.stats()["perf_maps_refused"] == 4, "perf map: a refusal is counted once per process")
    finally:
        tool.close()
        for p in progs:
            stop(p)
            if os.path.lexists(perf_map_of(p.pid)):
                os.unlink(perf_map_of(p.pid))


def vm_hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def test_perf_map_bounds(tmp):
    progs = [shell(":", user=False) for _ in range(3)]
    try:
        # Three maps of 239 MiB (sparse: the size alone refuses them, nothing is read).
        tool = Tool()
        for p in progs:
            with open(perf_map_of(p.pid), "w") as f:
                f.truncate(239 << 20)
            check(not jit_names(tool, p.pid), "perf map: 239 MiB map refused")
        st = tool.stats()
        hwm = vm_hwm_kib(tool.p.pid)
        check(st["perf_maps_too_big"] == 3 and st["perf_map_loads"] == 0 and hwm < 200 * 1024,
              "perf map: over the size bound refused, counted, peak RSS %d KiB" % hwm)
        tool.close()

        # Three maps of ~10 MiB under a 24 MiB byte bound: the least recently used one goes.
        line = "%x 10 " + "LazyCompile:~handler /app/server/routes/generated/module.js:%d" + " " * 40 + "\n"
        for p in progs:
            with open(perf_map_of(p.pid), "w") as f:
                f.write("".join(line % (0x10000000 + 16 * i, i) for i in range(100000)))
        tool = Tool("--max-bytes", str(24 << 20))
        for p in progs:
            got = jit_names(tool, p.pid, 0x10000000 + 16 * 7)
            check(got and got[0].strip().endswith("module.js:7"), "perf map: loaded under the byte bound (%s)" % got)
        st = tool.stats()
        check(st["perf_maps_evicted"] >= 1 and 0 < st["perf_map_bytes"] <= 24 << 20 and
              st["perf_map_bytes"] + st["module_bytes"] <= 24 << 20,
              "perf map: byte bound held by evicting the least recently used (%s)" % {
                  k: st[k] for k in ("perf_maps_evicted", "perf_map_bytes", "module_bytes", "perf_map_loads")})
        time.sleep(1.1)
        got = jit_names(tool, progs[0].pid, 0x10000000 + 16 * 9)
        check(got and got[0].strip().endswith("module.js:9") and tool.stats()["perf_map_loads"] == 4,
              "perf map: an evicted map is read again when needed (%s)" % got)
        tool.close()
    finally:
        for p in progs:
            stop(p)
            if os.path.exists(perf_map_of(p.pid)):
                os.unlink(perf_map_of(p.pid))


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (runs programs as nobody, reads their map_files)")
        return 77
    with tempfile.TemporaryDirectory(prefix="otelprof-trust-") as tmp:
        test_poisoned_build_id(tmp)
        test_identical_copies(tmp)
        test_perf_map_trust(tmp)
        test_perf_map_bounds(tmp)
    print("%d failure(s)" % len(ts.failures))
    return 1 if ts.failures else 0


if __name__ == "__main__":
    sys.exit(main())
