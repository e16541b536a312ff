#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""meson install puts the daemon, the systemd unit, the default configuration, the man page and the
allocation sampler (libotelprofd-alloc.so) in
place (into a scratch DESTDIR), and the installed unit starts the installed binary with that file."""
import os
import re
import subprocess
import sys
import tempfile

build = os.environ["BUILD_ROOT"]
dest = tempfile.mkdtemp(prefix="otelprofd-install-")
p = subprocess.run(["meson", "install", "-C", build, "--destdir", dest, "--no-rebuild", "--quiet"],
                   capture_output=True, text=True)
print(p.stdout[-2000:] + p.stderr[-2000:])
if p.returncode != 0:
    print("FAIL: meson install failed")
    sys.exit(1)
found = {}
for d, _, files in os.walk(dest):
    for f in files:
        found[f] = os.path.join(d, f)
for want in ("otelprofd", "otelprofd.service", "otelprofd.conf", "otelprofd.8", "libotelprofd-alloc.so"):
    if want not in found:
        print(f"FAIL: meson install did not install {want}: {sorted(found)}")
        sys.exit(1)
    print(f"installed {found[want][len(dest):]}")
unit = open(found["otelprofd.service"]).read()
exec_start = re.search(r"^ExecStart=(\S+) --config (\S+)$", unit, re.M)
if not exec_start or dest + exec_start.group(1) != found["otelprofd"] or dest + exec_start.group(2) != found["otelprofd.conf"]:
    print(f"FAIL: the unit's ExecStart does not name the installed binary and configuration: {exec_start and exec_start.group(0)}")
    sys.exit(1)
print("PASS")
