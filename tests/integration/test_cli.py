#!/usr/bin/env python3
"""What a user sees on bad input and without privileges: one clear line and exit 2."""
import os
import subprocess

import bpftest

exe = bpftest.otelprofd()


def expect(args, code, text, env=None, user=None):
    p = subprocess.run([exe] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60, env=env, user=user)
    out = p.stdout + p.stderr
    if p.returncode != code or text not in out:
        bpftest.fail(f"otelprofd {' '.join(args)}: exit {p.returncode}, expected {code} with {text!r}:\n{out}")
    print(f"ok: otelprofd {' '.join(args)} -> {code}")


expect(["--help"], 0, "--frequency")
expect(["--version"], 0, "otelprofd ")
expect(["--frequency", "0"], 2, "out of range")
expect(["--frequency", "abc"], 2, "not a number")
expect(["--pid", "abc"], 2, "not a process id")
expect(["--pid", "99999999"], 2, "no process with id")
expect(["--duration", "soon"], 2, "not a duration")
expect(["--output", "x.txt"], 2, "cannot tell the format")
expect(["--stack-copy", "65537"], 2, "not a size from 0 to 64KiB")  # one byte past the maximum
expect(["--follow-children"], 2, "needs --pid")
expect(["--no-such-flag"], 2, "unknown option")
expect(["stray"], 2, "unexpected argument")

# Without privileges: name what is missing, exit 2. Needs a user to drop to.
if os.geteuid() == 0:
    import pwd
    try:
        nobody = pwd.getpwnam("nobody")
        expect(["--duration", "1s"], 2, "Missing privileges", user=nobody.pw_uid)
    except KeyError:
        print("no 'nobody' user: privilege message not checked")
print("PASS")
