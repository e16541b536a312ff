#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The status line of a run on a terminal (ops/status_line.c), under a pseudo-terminal:

- stderr a terminal: a line "otelprofd: 0:01 / 0:03: N samples, N processes" redrawn in place
  (carriage return, erase to the end of the row), erased before the run's last lines; a log line
  printed meanwhile (SIGUSR1's summary) erases it first, starts its own row and is whole;
- stderr a file, or -q on a terminal: nothing of it.
"""
import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios

import bpftest

bpftest.require_bpf()
ERASE = "\r\x1b[K"
STATUS = re.compile(r"otelprofd: 0:0\d / 0:03: \d+ samples?, \d+ process(es)?")
out = bpftest.tmpdir()


def under_pty(args, usr1=False):
    """Run otelprofd with stdin, stdout and stderr on a new pseudo-terminal of 160 columns: all it wrote.
    With usr1, SIGUSR1 goes once the status line is drawn (the run's loop has begun)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    p = subprocess.Popen([bpftest.otelprofd()] + args, stdin=slave, stdout=slave, stderr=slave,
                         env=dict(os.environ, TERM="xterm"))
    os.close(slave)
    data = b""
    sent = False
    while True:
        if usr1 and not sent and STATUS.search(data.decode(errors="replace")):
            p.send_signal(signal.SIGUSR1)
            sent = True
        if not select.select([master], [], [], 1)[0]:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        data += chunk
    os.close(master)
    p.wait(timeout=30)
    text = data.decode(errors="replace").replace("\r\n", "\n")  # the terminal's output translation
    return p.returncode, text


folded = os.path.join(out, "t.folded")
code, text = under_pty(["-d", "3s", "-o", folded], usr1=True)
if code != 0:
    bpftest.fail(f"exit {code} under a terminal:\n{text!r}")
draws = [m.start() for m in STATUS.finditer(text)]
print(f"{len(draws)} status lines drawn; the output: {text!r}")
if len(draws) < 2:
    bpftest.fail("fewer than 2 status lines in a 3 s run on a terminal")
wrote = text.find("otelprofd: Wrote ")
last_erase = text.rfind(ERASE)
if wrote < 0 or not (draws[-1] < last_erase < wrote):
    bpftest.fail("the status line was not erased before the run's last lines")
if STATUS.search(text[wrote:]):
    bpftest.fail("a status line after the run's last lines")
# SIGUSR1's summary: on a row of its own, the status erased before it and drawn again after it.
usr1 = text.find("otelprofd: SIGUSR1: stats: ")
if usr1 < 0:
    bpftest.fail("no SIGUSR1 summary line")
if not text[:usr1].endswith(ERASE):
    bpftest.fail(f"the SIGUSR1 line does not start on an erased row: {text[max(0, usr1 - 80):usr1 + 80]!r}")
row = text[usr1:text.index("\n", usr1)]
if ERASE in row or STATUS.search(row):
    bpftest.fail(f"the SIGUSR1 line is garbled by the status line: {row!r}")
if not STATUS.match(text, text.index("\n", usr1) + 1):
    bpftest.fail("the status line was not drawn again after the SIGUSR1 line")
print("ok: on a terminal: redrawn in place, erased before the last lines, a log line meanwhile whole")

# stderr a file (a pipe, the journal are the same: not a terminal): nothing of it.
log = os.path.join(out, "stderr.log")
with open(log, "w") as f:
    p = subprocess.run([bpftest.otelprofd(), "-d", "2s", "-o", folded], stdout=subprocess.DEVNULL, stderr=f)
text = open(log).read()
if p.returncode != 0 or "\x1b" in text or "\r" in text or " / 0:02" in text:
    bpftest.fail(f"stderr a file: exit {p.returncode}, escape sequences or a status line in it:\n{text!r}")
print("ok: stderr a file: no status line")

# -q on a terminal: nothing but errors.
code, text = under_pty(["-q", "-d", "2s", "-o", folded])
if code != 0 or "\x1b" in text or "otelprofd:" in text:
    bpftest.fail(f"-q on a terminal: exit {code}, output {text!r}")
print("ok: -q on a terminal: no status line")
print("PASS")
