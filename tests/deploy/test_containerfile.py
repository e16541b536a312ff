#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The container build file: multi-stage on Debian 12, and its runtime stage installs a package for
every shared library the built otelprofd links (found with ldd and dpkg -S)."""
import json
import os
import re
import subprocess
import sys

root = os.environ["SOURCE_ROOT"]
text = open(os.path.join(root, "deploy", "Containerfile")).read()


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", text, re.M | re.I)
print("stages:", stages)
if len(stages) < 2 or not all(s[0].startswith("debian:12") or s[0].startswith("debian:bookworm") for s in stages):
    fail("expected a multi-stage build on Debian 12")
runtime = text[text.rfind("\nFROM"):]
installed = set(re.findall(r"\b(lib[a-z0-9.+-]+|zlib1g|ca-certificates)\b", runtime))

# The libraries otelprofd links directly (DT_NEEDED); theirs come with their packages.
direct = set(re.findall(r"\(NEEDED\)\s+Shared library: \[(\S+)\]",
                        subprocess.run(["readelf", "-d", os.environ["OTELPROFD"]], capture_output=True,
                                       text=True).stdout))
ldd = subprocess.run(["ldd", os.environ["OTELPROFD"]], capture_output=True, text=True).stdout
needed = set()
for line in ldd.splitlines():
    m = re.search(r"^\s*(\S+)\s+=>\s+(/\S+)", line)
    if not m or m.group(1) not in direct:
        continue
    m = re.search(r"=>\s+(/\S+)", line)
    owner = subprocess.run(["dpkg", "-S", os.path.realpath(m.group(1))], capture_output=True, text=True)
    if owner.returncode != 0:
        owner = subprocess.run(["dpkg", "-S", m.group(1)], capture_output=True, text=True)
    pkg = owner.stdout.split(":")[0].strip()
    if pkg and pkg not in ("libc6", "libgcc-s1", "libstdc++6"):
        needed.add(pkg)
print("runtime packages needed:", sorted(needed))
missing = needed - installed
if missing:
    fail(f"the runtime stage does not install {sorted(missing)}")
# The flags of ENTRYPOINT and CMD are flags the daemon has (a flag renamed in the code breaks this).
help_text = subprocess.run([os.environ["OTELPROFD"], "--help"], capture_output=True, text=True).stdout
known = set(re.findall(r"(--[a-z][a-z0-9-]*)", help_text))
used = []
for kind, args in re.findall(r"^(ENTRYPOINT|CMD)\s+(\[.*\])\s*$", runtime, re.M):
    for arg in json.loads(args):
        used += re.findall(r"^(--[a-z][a-z0-9-]*)", arg)
if not re.search(r"^CMD\s", runtime, re.M):
    fail("the runtime stage has no CMD")
for flag in used:
    if flag not in known:
        fail(f"the Containerfile passes {flag}, which otelprofd --help does not list")
print(f"ENTRYPOINT/CMD flags, all in --help: {used}")
print("PASS")
