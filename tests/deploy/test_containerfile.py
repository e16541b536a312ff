#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The container build file: multi-stage on Debian 12, and its runtime stage installs a package for
every shared library the built otelprofd links (found with ldd and dpkg -S) and for every library it
loads at first use (the *_LIB_PACKAGE of its loaders, symbolizer/dl_lib.h); the Debian package
depends on or recommends each of the latter (dpkg-shlibdeps cannot see them)."""
import glob
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
loaded = set()
for header in glob.glob(os.path.join(root, "daemon", "**", "*.h"), recursive=True) + \
        glob.glob(os.path.join(root, "symbolizer", "*.h")):
    loaded |= set(re.findall(r'^#define \w+_LIB_PACKAGE "(\S+)"', open(header).read(), re.M))
print("packages loaded at first use:", sorted(loaded))
if len(loaded) < 3:
    fail(f"expected the loaders of gRPC, libcurl and libdebuginfod, found {sorted(loaded)}")
if loaded - installed:
    fail(f"the runtime stage does not install {sorted(loaded - installed)}, loaded at first use")
control = open(os.path.join(root, "debian", "control")).read()
binary = control[control.index("\nPackage: otelprofd"):]
relations = " ".join(re.findall(r"^(?:Depends|Recommends):((?:.*\n)(?:[ \t].*\n)*)", binary, re.M))
unlisted = [pkg for pkg in sorted(loaded) if not re.search(rf"(^|[\s,]){re.escape(pkg)}([\s,(]|$)", relations)]
if unlisted:
    fail(f"debian/control's otelprofd neither depends on nor recommends {unlisted}, loaded at first use")
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
