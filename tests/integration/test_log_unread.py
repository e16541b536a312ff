#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Never stuck on its log (issue 27 item 2): otelprofd's stderr a pipe nobody reads (a one-page pipe,
as a stalled journal or a parent that stopped reading would be). Before, the loop's next log line
blocked it: one bench saw the daemon stand 87 s. Now lines go to a bounded queue written by a thread
of their own (its bound made small here with OTELPROFD_TEST_LOG_QUEUE_BYTES, so that -v's lines fill
it), and those that do not fit are dropped and counted.

1. -d 3s, stderr never read: the run ends within 2 s of its duration (2.98-3.11 s after /ready
   measured, gcc and ASan), its profile written.
2. SIGTERM, stderr still not read: the daemon ends within 1 s, its profile written, and /metrics
   counted the lines dropped (otelprofd_log_lines_dropped_total). The pipe is read from the SIGTERM
   on: the writer catches up and says "N log lines dropped" where they are missing."""
import fcntl
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import bpftest

SPLIT = os.environ["SPLIT_WORKLOAD"]  # a busy program with small debug info: its open is quick
BOUND = 1.0  # issue 27: "-d and SIGTERM end the run within 1 s, with the profile written"
# A -d run is timed from /ready, which comes after its start: its end, profile written and exit (an
# ASan build's leak check) within its deadline + 2 s, the bound of test_stuck.py's -d run (issue 27
# item 4). Before, the run never ended.
DURATION_BOUND = 2.0
DURATION = 3

bpftest.require_bpf()
out = bpftest.tmpdir()


def unread_pipe():
    """(read end, write end) of a pipe of one page."""
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 4096)
    return r, w


def start(args, w):
    """otelprofd with stderr the pipe's write end, once /ready answers: (process, metrics port, when)."""
    port = bpftest.free_port()
    env = dict(os.environ, OTELPROFD_TEST_LOG_QUEUE_BYTES="8192")
    daemon = subprocess.Popen([bpftest.otelprofd(), "--pid", str(workload.pid), "-F", "999", "-v",
                               "--metrics-address", f"127.0.0.1:{port}"] + args,
                              stdout=subprocess.DEVNULL, stderr=w, env=env)
    os.close(w)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            bpftest.fail(f"otelprofd exited {daemon.returncode} before it was ready")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=5).read()
            return daemon, port, time.monotonic()
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.05)
    daemon.kill()
    bpftest.fail("otelprofd was not ready within 90 s")


def wait_end(daemon, timeout):
    """When it ended (killed and failed when it had not by timeout)."""
    try:
        daemon.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()
        bpftest.fail(f"otelprofd still ran {timeout:.1f} s later, its stderr not read")
    return time.monotonic()


def samples(path):
    return sum(bpftest.read_folded(path).values()) if os.path.exists(path) else 0


workload = subprocess.Popen([SPLIT, "120"])
try:
    time.sleep(0.3)  # exec'd and mapped

    # 1. -d: the run ends on time whatever its stderr does.
    folded = os.path.join(out, "duration.folded")
    r, w = unread_pipe()
    daemon, _, ready = start(["-d", f"{DURATION}s", "-o", folded], w)
    ended = wait_end(daemon, DURATION + DURATION_BOUND + 30)
    os.close(r)
    # When the profile was written (its file's change time, on the monotonic clock of the rest).
    written = time.monotonic() - (time.time() - os.stat(folded).st_mtime) if os.path.exists(folded) else ended
    print(f"duration: profile written {written - ready:.2f} s and the run ended {ended - ready:.2f} s after "
          f"/ready ({DURATION} s run), exit {daemon.returncode}, {samples(folded)} samples written")
    if ended - ready > DURATION + DURATION_BOUND:
        bpftest.fail(f"a {DURATION} s run with its stderr unread ended {ended - ready:.2f} s after it was ready")
    if daemon.returncode != 0 or samples(folded) == 0:
        bpftest.fail(f"exit {daemon.returncode}, {samples(folded)} samples written")

    # 2. SIGTERM; the lines dropped are counted, and said once the pipe is read.
    folded = os.path.join(out, "term.folded")
    r, w = unread_pipe()
    daemon, port, ready = start(["-d", "60s", "-o", folded], w)
    time.sleep(2)
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    dropped = [line for line in metrics.splitlines() if line.startswith("otelprofd_log_lines_dropped_total ")]
    term_at = time.monotonic()
    daemon.send_signal(signal.SIGTERM)
    said = []

    def read_all():
        said.extend(iter(lambda: os.read(r, 65536), b""))
    reader = threading.Thread(target=read_all, daemon=True)
    reader.start()
    ended = wait_end(daemon, 30)
    reader.join(30)
    os.close(r)
    log = b"".join(said).decode(errors="replace")
    notes = [line for line in log.splitlines() if "log lines dropped" in line or "log line dropped" in line]
    print(f"term: ended {ended - term_at:.2f} s after SIGTERM, exit {daemon.returncode}, {samples(folded)} samples "
          f"written; /metrics: {dropped}; said: {notes[:3]}")
    if ended - term_at > BOUND:
        bpftest.fail(f"otelprofd ended {ended - term_at:.2f} s after SIGTERM, its stderr unread (bound {BOUND} s)")
    if daemon.returncode != 0 or samples(folded) == 0:
        bpftest.fail(f"exit {daemon.returncode}, {samples(folded)} samples written")
    if not dropped or float(dropped[0].split()[1]) <= 0:
        bpftest.fail(f"no log lines counted as dropped with an unread stderr: {dropped}")
    if not notes:
        bpftest.fail("the writer did not say how many log lines were dropped once stderr was read:\n" + log[-3000:])
finally:
    workload.kill()
    workload.wait()
print("PASS")
