#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What a user sees on bad input and without privileges: one clear line and exit 2."""
import os
import shutil
import subprocess

import bpftest

exe = bpftest.otelprofd()


def expect(args, code, text, env=None, user=None, timeout=60, absent=None):
    """Run otelprofd: exit code and text in the output, and absent (a secret, a raw control
    character) not in it."""
    try:
        p = subprocess.run([exe] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, env=env, user=user)
    except subprocess.TimeoutExpired:
        bpftest.fail(f"otelprofd {args!r} still running after {timeout} s")
    out = p.stdout + p.stderr
    if p.returncode != code or text not in out or (absent and absent in out):
        bpftest.fail(f"otelprofd {args!r}: exit {p.returncode}, expected {code} with {text!r}"
                     f"{f' and without {absent!r}' if absent else ''}:\n{out}")
    print(f"ok: otelprofd {args!r} -> {code}")


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
# The output path is checked before sampling, not after the hour (no privileges needed to be told).
expect(["-o", "/nonexistent/x.folded", "-d", "1h"], 2, "Cannot write /nonexistent/x.folded: its directory does not exist",
       timeout=10)
expect(["-o", "/", "-d", "1h"], 2, "cannot tell the format", timeout=10)
expect(["--no-such-flag"], 2, "unknown option")
expect(["stray"], 2, "unexpected argument")
expect(["--pid", "1,,2"], 2, "empty element")
expect(["--metrics-address", "127.0.0.1:99999"], 2, "the port is not a number from 1 to 65535")
expect(["--endpoint", "::::"], 2, "an IPv6 address needs brackets")
expect(["--endpoint", "collector:4317\r\nforged line"], 2, "control characters are not allowed", absent="\r")
env = dict(os.environ, OTEL_EXPORTER_OTLP_HEADERS="x=1,authorization=Bearer%zzs3cret")
expect([], 2, "entry 2 ('authorization'): value is not percent-encoded properly", env=env, absent="s3cret")

# --config: a FIFO nobody writes to is refused at once (it hung the open); a byte order mark is fine.
tmp = bpftest.tmpdir()
fifo = os.path.join(tmp, "fifo.conf")
os.mkfifo(fifo)
expect(["--check-config", "--config", fifo], 2, "not a regular file", timeout=10)
bom = os.path.join(tmp, "bom.conf")
with open(bom, "wb") as f:
    f.write(b"\xef\xbb\xbf# made on another system\nfrequency = 99\n")
expect(["--check-config", "--config", bom], 0, "configuration is valid", timeout=10)
folded_dir = os.path.join(tmp, "dir.folded")
os.mkdir(folded_dir)
expect(["-o", folded_dir, "-d", "1h"], 2, f"Cannot write {folded_dir}: it is a directory", timeout=10)
shutil.rmtree(tmp)

# Without privileges: name what is missing, exit 2. Needs a user to drop to.
if os.geteuid() == 0:
    import pwd
    try:
        nobody = pwd.getpwnam("nobody")
        expect(["--duration", "1s"], 2, "Missing privileges", user=nobody.pw_uid)
    except KeyError:
        print("no 'nobody' user: privilege message not checked")
print("PASS")
