#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The commands the README and docs/ show still work.

- README's quick start: scripts/run.sh and scripts/test.sh exist, are executable and parse
  (bash -n); run.sh runs for a second when this test's binary is the one it builds (build/), else
  the binary it ends in runs the same way. (test.sh runs every suite: not from inside one.)
- Every fenced block tagged ```sh in README.md and docs/*.md runs with bash -e from the repository
  root, with the binary under test as build/daemon/otelprofd and on PATH; a block that fails fails
  the test with its file and line. ```console and ```text blocks are shown, not run.
"""
import glob
import os
import re
import subprocess
import sys
import time

import bpftest

bpftest.require_bpf()
root = os.environ["SOURCE_ROOT"]
exe = os.path.abspath(os.environ["OTELPROFD"])
failures = []


def run(cmd, timeout=30, **kw):
    return subprocess.run(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, **kw)


# The quick start.
readme = open(os.path.join(root, "README.md")).read()
quick = readme[readme.index("## Quick start"):]
quick = quick[:quick.index("\n## ", 1)]
for script in ("scripts/run.sh", "scripts/test.sh"):
    path = os.path.join(root, script)
    if script not in quick:
        failures.append(f"README.md: the quick start no longer shows {script}")
    elif not os.access(path, os.X_OK):
        failures.append(f"{script}: missing or not executable")
    elif run(["bash", "-n", path]).returncode != 0:
        failures.append(f"{script}: bash -n fails")
run_sh = open(os.path.join(root, "scripts/run.sh")).read()
if 'exec build/daemon/otelprofd "$@"' not in run_sh:
    failures.append('scripts/run.sh no longer ends in exec build/daemon/otelprofd "$@"')
start = time.time()
if exe == os.path.join(root, "build", "daemon", "otelprofd"):
    p = run(["scripts/run.sh", "--duration", "1s", "--top", "3"], timeout=120)
    what = "scripts/run.sh --duration 1s --top 3"
else:  # its build step would build another directory than the one under test
    p = run([exe, "--duration", "1s", "--top", "3"])
    what = f"{exe} --duration 1s --top 3 (what scripts/run.sh runs)"
if p.returncode != 0 or not re.search(r"\d+ samples? from \d+ process", p.stdout):
    failures.append(f"README.md quick start: {what}: exit {p.returncode}:\n{p.stdout[-2000:]}")
print(f"ok: {what} ({time.time() - start:.1f} s)")

# Every ```sh block.
env = dict(os.environ, PATH=os.path.dirname(exe) + ":" + os.environ.get("PATH", ""))
pages = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
blocks = 0
for page in pages:
    rel = os.path.relpath(page, root)
    lines = open(page).read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if m.group(1) == "sh":
            script = "\n".join(lines[i + 1:end]).replace("build/daemon/otelprofd", exe)
            blocks += 1
            start = time.time()
            try:
                p = run(["bash", "-e", "-c", script], env=env)
                out, code = p.stdout, p.returncode
            except subprocess.TimeoutExpired as e:
                out, code = e.stdout if isinstance(e.stdout, str) else "", "timeout (30 s)"
            print(f"{rel}:{i + 1}: exit {code} in {time.time() - start:.1f} s")
            if code != 0:
                failures.append(f"{rel}:{i + 1}: the ```sh block failed ({code}):\n"
                                + "\n".join(lines[i + 1:end]) + "\n--- output:\n" + out[-2000:])
        i = end + 1
print(f"{blocks} sh blocks in {len(pages)} pages")
if blocks < 5:
    failures.append(f"only {blocks} ```sh blocks found: is the convention still ```sh?")
if failures:
    for f in failures:
        print("FAIL:", f)
    sys.exit(1)
print("PASS")
