#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Print the offsets a goroutine-label reader needs (runtime.g.m, runtime.m.curg, runtime.g.labels)
from the DWARF of unstripped Go binaries, one line per binary: how the per-version table in
runtimes/README.md was made (build a small program with each toolchain of scripts/go-toolchain.sh,
then run this on the results).

  scripts/go-runtime-offsets.py BINARY...
"""
import re
import subprocess
import sys

WANT = {"runtime.g": ("m", "labels", "goid"), "runtime.m": ("curg",)}
ENTRY = re.compile(r"\s*<(\d+)><[0-9a-f]+>: Abbrev Number: \d+ \((DW_TAG_\w+)\)")
NAME = re.compile(r"DW_AT_name\s*:\s*(?:\([^)]*\)\s*)?(\S+)")
LOCATION = re.compile(r"DW_AT_data_member_location\s*:\s*(?:\([^)]*\)\s*)?(\d+)")


def offsets(binary):
    dump = subprocess.run(["readelf", "--debug-dump=info", "-W", binary], capture_output=True, text=True,
                          check=True).stdout
    found, struct, struct_depth, tag, member = {}, None, None, None, None
    for line in dump.splitlines():
        m = ENTRY.match(line)
        if m:
            depth, tag = int(m.group(1)), m.group(2)
            if struct_depth is not None and depth <= struct_depth:
                struct, struct_depth = None, None
            if tag == "DW_TAG_structure_type":
                struct, struct_depth = "?", depth
            continue
        name = NAME.search(line)
        if name and tag == "DW_TAG_structure_type" and struct == "?":
            struct = name.group(1) if name.group(1) in WANT else None
        elif name and tag == "DW_TAG_member":
            member = name.group(1)
        loc = LOCATION.search(line)
        if loc and struct in WANT and tag == "DW_TAG_member" and member in WANT[struct]:
            found[f"{struct}.{member}"] = int(loc.group(1))
    return found


for path in sys.argv[1:]:
    o = offsets(path)
    print(path, " ".join(f"{k}={v}" for k, v in sorted(o.items())))
