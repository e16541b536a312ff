# SPDX-License-Identifier: Apache-2.0
"""Decode a gzipped pprof file with protoc and return its samples with their labels resolved."""
import gzip
import os
import re
import subprocess

import bpftest


def _decode(path):
    proto = os.environ["PPROF_PROTO"]
    dec = subprocess.run(["protoc", "--decode", "perftools.profiles.Profile", "--proto_path",
                          os.path.dirname(proto), os.path.basename(proto)],
                         input=gzip.open(path).read(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if dec.returncode != 0:
        bpftest.fail("protoc could not decode the pprof output: " + dec.stderr.decode())
    return dec.stdout.decode()


def stacks(path):
    """[(count, [[(function, file, line) innermost first] per location, leaf first], {label: value})]."""
    dec = _decode(path)
    strings = re.findall(r'^string_table: "(.*)"$', dec, re.M)
    functions = {}
    for m in re.finditer(r"^function \{\n(.*?)^\}", dec, re.M | re.S):
        body = m.group(1)
        name = re.search(r"\bname: (\d+)", body)
        fname = re.search(r"\bfilename: (\d+)", body)
        functions[int(re.search(r"id: (\d+)", body).group(1))] = (
            strings[int(name.group(1))] if name else "", strings[int(fname.group(1))] if fname else "")
    locations = {}
    for m in re.finditer(r"^location \{\n(.*?)^\}", dec, re.M | re.S):
        body = m.group(1)
        lines = []
        for lm in re.finditer(r"line \{\n(.*?)\n\s*\}", body, re.S):
            fid = re.search(r"function_id: (\d+)", lm.group(1))
            ln = re.search(r"\bline: (\d+)", lm.group(1))
            fn = functions.get(int(fid.group(1)), ("", "")) if fid else ("", "")
            lines.append((fn[0], fn[1], int(ln.group(1)) if ln else 0))
        locations[int(re.search(r"^  id: (\d+)", body, re.M).group(1))] = lines
    out = []
    for m in re.finditer(r"^sample \{\n(.*?)^\}", dec, re.M | re.S):
        body = m.group(1)
        labels = {}
        for lm in re.finditer(r"label \{\n\s*key: (\d+)\n(?:\s*str: (\d+)\n)?(?:\s*num: (-?\d+)\n)?\s*\}", body):
            labels[strings[int(lm.group(1))]] = strings[int(lm.group(2))] if lm.group(2) else int(lm.group(3) or 0)
        locs = [locations.get(int(x), []) for x in re.findall(r"location_id: (\d+)", body)]
        values = [int(x) for x in re.findall(r"value: (-?\d+)", body)]
        out.append((values[0] if values else 0, locs, labels))
    return out


def samples(path, frames=False):
    """[(labels: {key: str or int}, leaf function or None, value)] of every sample in the file;
    with frames=True, the list of every location's function (leaf first) instead of the leaf."""
    text = _decode(path)
    strings = [bytes(s, "latin-1").decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")
               for s in re.findall(r'^string_table: "(.*)"$', text, re.M)]
    functions = {}
    for m in re.finditer(r"^function \{\n(.*?)^\}", text, re.M | re.S):
        body = m.group(1)
        fid = int(re.search(r"id: (\d+)", body).group(1))
        name = re.search(r"\bname: (\d+)", body)
        functions[fid] = strings[int(name.group(1))] if name else None
    locations = {}
    for m in re.finditer(r"^location \{\n(.*?)^\}", text, re.M | re.S):
        body = m.group(1)
        lid = int(re.search(r"^  id: (\d+)", body, re.M).group(1))
        fn = re.search(r"function_id: (\d+)", body)
        locations[lid] = functions.get(int(fn.group(1))) if fn else None
    out = []
    for m in re.finditer(r"^sample \{\n(.*?)^\}", text, re.M | re.S):
        body = m.group(1)
        labels = {}
        for lm in re.finditer(r"label \{\n\s*key: (\d+)\n(?:\s*str: (\d+)\n)?(?:\s*num: (-?\d+)\n)?\s*\}", body):
            key = strings[int(lm.group(1))]
            labels[key] = strings[int(lm.group(2))] if lm.group(2) else int(lm.group(3) or 0)
        locs = [int(x) for x in re.findall(r"location_id: (\d+)", body)]
        values = [int(x) for x in re.findall(r"value: (-?\d+)", body)]
        names = [locations.get(loc) for loc in locs] if frames else (locations.get(locs[0]) if locs else None)
        out.append((labels, names, values[0] if values else 0))
    return out


def sample_types(path):
    """([(type, unit)] of the profile, and its samples' values: [[int] per sample])."""
    text = _decode(path)
    strings = re.findall(r'^string_table: "(.*)"$', text, re.M)
    types = [(strings[int(t)], strings[int(u)]) for t, u in
             re.findall(r"^sample_type \{\n\s*type: (\d+)\n\s*unit: (\d+)\n\}", text, re.M)]
    values = [[int(x) for x in re.findall(r"^  value: (-?\d+)$", body, re.M)]
              for body in re.findall(r"^sample \{\n(.*?)^\}", text, re.M | re.S)]
    return types, values
