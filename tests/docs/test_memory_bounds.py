#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""docs/memory.md's table of bounds agrees with the code: each row's constant (the `code` column) is
#defined once in daemon/, symbolizer/, runtimes/ or bpf/ to the row's default; each flag it names is
in --help; each counter it names is in docs/self-monitoring.md (which test_metric_list.py checks
against the code)."""
import os
import re
import subprocess

import bpftest

root = os.environ["SOURCE_ROOT"]
UNITS = {"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def defines():
    """NAME -> [expression, ...] of every #define in the C sources."""
    out = {}
    for top in ("daemon", "symbolizer", "runtimes", "bpf"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".c", ".h")):
                    for m in re.finditer(r"^#define ([A-Z_0-9]+)[ \t]+(.+?)\s*(?:/\*.*)?$",
                                         open(os.path.join(d, f), errors="replace").read(), re.M):
                        out.setdefault(m.group(1), []).append(m.group(2).strip())
    return out


def evaluate(expr, defs, depth=0):
    """The value of a constant integer expression (C suffixes and casts dropped, macros expanded)."""
    if depth > 8:
        raise ValueError(f"{expr}: too deep")
    e = re.sub(r"\((?:size_t|unsigned|uint64_t|uint32_t|int)\)", "", expr)
    e = re.sub(r"\b(\d+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU])\b", r"\1", e)
    e = re.sub(r"\b([A-Z_][A-Z_0-9]+)\b", lambda m: f"({evaluate(defs[m.group(1)][0], defs, depth + 1)})", e)
    if not re.fullmatch(r"[\d\s()<>*+\-/]+", e):
        raise ValueError(f"{expr}: not a constant expression")
    return eval(e, {"__builtins__": {}})  # digits and operators only, checked above


def parse_default(text):
    m = re.fullmatch(r"([\d,]+)\s*(KiB|MiB|GiB)?", text.strip())
    return (int(m.group(1).replace(",", "")), m.group(2) or "") if m else None


page = open(os.path.join(root, "docs", "memory.md")).read()
table = page[page.index("## Every bound"):]
rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| what")]
defs = defines()
help_text = subprocess.run([os.environ["OTELPROFD"], "--help"], capture_output=True, text=True).stdout
metrics_page = open(os.path.join(root, "docs", "self-monitoring.md")).read()
errors, checked = [], 0
for row in rows:
    cells = [c.strip() for c in row.strip("|").split("|")]
    if len(cells) != 6:
        errors.append(f"not 6 cells: {row}")
        continue
    what, _, default, flags, code, counters = cells
    for flag in re.findall(r"`(--[a-z-]+)`", flags):
        if flag not in help_text:
            errors.append(f"{what}: {flag} is not in --help")
    for metric in re.findall(r"`([a-z_]+_total|[a-z_]+_bytes)[`{]", counters):
        if f"otelprofd_{metric}" not in metrics_page:
            errors.append(f"{what}: otelprofd_{metric} is not in docs/self-monitoring.md")
    name = re.fullmatch(r"`([A-Z_0-9]+)`", code)
    if not name:
        continue
    name = name.group(1)
    values = {evaluate(e, defs) for e in defs.get(name, [])}
    parsed = parse_default(default)
    if not values:
        errors.append(f"{what}: {name} is #defined nowhere")
    elif len(values) > 1:
        errors.append(f"{what}: {name} is #defined to several values {sorted(values)}")
    elif not parsed:
        errors.append(f"{what}: default {default!r} is not a number")
    else:
        number, unit = parsed
        want = number if name.endswith("_KIB") and unit == "KiB" else number * UNITS[unit]
        if values != {want}:
            errors.append(f"{what}: the page says {default}, the code's {name} is {values.pop()}")
        checked += 1
print(f"{len(rows)} rows, {checked} defaults checked against the code")
if checked < 25:
    errors.append(f"only {checked} defaults checked: did the table's form change?")
if errors:
    bpftest.fail("docs/memory.md and the code disagree:\n  " + "\n  ".join(errors))
print("ok")
