#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The kernel's mmap events' own cost under a process storm: one otelprofd build run twice at once
over the whole host at 99 Hz for 15 s, with and without its mmap events
(OTELPROFD_TEST_NO_MMAP_EVENTS=1), while a shell starts /bin/true as fast as it can; prints each
run's user + system CPU (/usr/bin/time) and its -v lines on the events and the symbolizer.

  bench/mmap_events_storm.py [BUILD_DIR]     (default build; run as root)
"""
import os
import subprocess
import sys
import tempfile

b = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build", "daemon", "otelprofd")
out = tempfile.mkdtemp(prefix="otelprofd-bench-")
storm = subprocess.Popen(["/bin/sh", "-c", "while :; do /bin/true; done"])


def run(env_extra, path):
    env = dict(os.environ, **env_extra)
    return subprocess.Popen(["/usr/bin/time", "-f", "%U %S", b, "-F", "99", "-d", "15s", "-o", path, "-v"],
                            stderr=subprocess.PIPE, text=True, env=env)


a = run({}, os.path.join(out, "on.folded"))
c = run({"OTELPROFD_TEST_NO_MMAP_EVENTS": "1"}, os.path.join(out, "off.folded"))
ea = a.communicate()[1]
ec = c.communicate()[1]
storm.kill()
for name, e in (("events on", ea), ("events off", ec)):
    user, system = e.strip().splitlines()[-1].split()
    events = [line for line in e.splitlines() if "mmap events:" in line]
    sym = [line for line in e.splitlines() if "debug: symbolizer:" in line]
    print(f"{name}: CPU {float(user) + float(system):.2f} s", events[-1] if events else "", sym[-1] if sym else "",
          sep="\n  ")
