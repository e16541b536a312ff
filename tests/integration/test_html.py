#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""HTML flame graphs in a real browser (Debian's chromium, headless, --dump-dom):

- one short otelprofd run over the waits workload (tests/workloads/waits.c) with --off-cpu, written
  to FILE.html; the page rendered with #search=compute_only in its URL: frames of compute_only and
  compute_locked drawn, the search's matches highlighted and its share (> 0) shown; with #view=1 the
  off-CPU view draws wait_sleep and wait_pipe;
- in the same run, a second otelprofd writing --format=pprof to standard output (-o -): gzip that
  decodes to samples of the workload;
- `otelprofd diff` of two folded files as a page: the frame that grew red, the one that shrank
  blue, the unchanged one neither; and bad inputs (missing, garbage, empty, truncated gzip,
  different sample types): one line, exit status 2.
"""
import gzip
import os
import re
import shutil
import subprocess
import time

import bpftest
import pprofdecode

bpftest.require_bpf()
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    bpftest.skip("chromium is not installed (scripts/install-deps.sh installs it)")
out = bpftest.tmpdir()
os.chmod(out, 0o755)
otelprofd = bpftest.otelprofd()


def browse(page, fragment=""):
    """Start headless chromium on page; .communicate() gives the rendered DOM."""
    return subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             f"--user-data-dir={out}/chromium-{os.path.basename(page)}-{len(fragment)}",
                             "--window-size=1280,900", "--dump-dom", f"file://{page}{fragment}"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def dom_of(proc, what):
    dom = proc.communicate(timeout=90)[0]
    if "data-render-ms" not in dom:
        bpftest.fail(f"{what}: the page did not render (no data-render-ms on <body>): {dom[:2000]}")
    return dom


def frames(dom):
    """[(classes, text, background)] of the drawn frames."""
    return [(m.group(1), m.group(3), m.group(2)) for m in
            re.finditer(r'<div class="(f[^"]*)" data-i="\d+"[^>]*?background:\s*([^";]+)[^>]*>([^<]*)</div>', dom)]


# 1. One run: the page, and pprof on standard output from a second otelprofd beside it.
w = subprocess.Popen([os.environ["WAITS_WORKLOAD"], "3"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
page = os.path.join(out, "waits.html")
common = ["--pid", str(w.pid), "-F", "499", "--duration", "3s"]
d = subprocess.Popen([otelprofd] + common + ["--off-cpu", "--off-cpu-probability", "1", "-o", page],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
d2 = subprocess.Popen([otelprofd] + common + ["--format=pprof", "-o", "-"], stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE)
log = bpftest.wait_profiling(d, others=(w, d2))
log2 = b""
while b"Profiling" not in log2:
    line = d2.stderr.readline()
    if not line:
        bpftest.fail("the second otelprofd did not start: " + log2.decode())
    log2 += line
w.stdin.write("go\n")
w.stdin.flush()
rest = d.communicate(timeout=120)[1]
pprof_bytes, pprof_log = d2.communicate(timeout=120)
pprof_log = log2 + pprof_log
w.wait(timeout=60)
print(log + rest)
if d.returncode != 0 or not os.path.exists(page):
    bpftest.fail(f"otelprofd -o {page} exited {d.returncode}")
if d2.returncode != 0 or pprof_bytes[:2] != b"\x1f\x8b":
    bpftest.fail(f"--format=pprof -o - exited {d2.returncode} and wrote {pprof_bytes[:16]!r}: {pprof_log.decode()}")
stdout_pprof = os.path.join(out, "stdout.pb.gz")
with open(stdout_pprof, "wb") as f:
    f.write(pprof_bytes)
workload_samples = sum(v for labels, _, v in pprofdecode.samples(stdout_pprof) if labels.get("process_name") == "waits")
print(f"pprof on standard output: {len(pprof_bytes)} bytes, {workload_samples} samples of the workload")
if workload_samples <= 0:
    bpftest.fail("the pprof written to standard output has no sample of the workload")
with open(page) as f:
    html = f.read()
if re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', html):
    bpftest.fail("the page loads something from the network")

# 2. The diff of two folded files, and the browser on the three pages at once.
base, new = os.path.join(out, "base.folded"), os.path.join(out, "new.folded")
with open(base, "w") as f:
    f.write("app;main;handle;parse_json 600\napp;main;handle;query_db 300\napp;main;log_line 100\n")
with open(new, "w") as f:
    f.write("app;main;handle;parse_json 150\napp;main;handle;query_db 1200\napp;main;log_line 200\n")
diff_page = os.path.join(out, "diff.html")
bpftest.run([otelprofd, "diff", base, new, "-o", diff_page])
browsers = [browse(page, "#search=compute_only"), browse(page, "#view=1"), browse(diff_page)]
cpu, off, diff = (dom_of(b, n) for b, n in zip(browsers, ("on-CPU page", "off-CPU view", "diff page")))

# 3. On-CPU view with a search from the URL.
drawn = frames(cpu)
names = {t for _, t, _ in drawn}
render_ms = re.search(r'data-render-ms="(\d+)"', cpu).group(1)
print(f"on-CPU: {len(drawn)} frames drawn, rendered in {render_ms} ms")
for fn in ("compute_only", "compute_locked"):
    if fn not in names:
        bpftest.fail(f"no frame of {fn} drawn; frames: {sorted(names)[:60]}")
if not any("m" in c.split() and t == "compute_only" for c, t, _ in drawn):
    bpftest.fail("the search from the URL (#search=compute_only) highlights no compute_only frame")
m = re.search(r'<span id="matched" data-share="([0-9.]+)">Matched: ([0-9.]+)%', cpu)
if not m or float(m.group(1)) <= 0 or float(m.group(2)) <= 0:
    bpftest.fail("the share matched by the search is not shown: " + str(re.search(r'<span id="matched"[^<]*', cpu)))
print(f"search compute_only: matched {m.group(2)}% of the samples")

# 4. Off-CPU view.
off_names = {t for _, t, _ in frames(off)}
for fn in ("wait_sleep", "wait_pipe"):
    if fn not in off_names:
        bpftest.fail(f"the off-CPU view draws no {fn}; frames: {sorted(off_names)[:60]}")
if 'class="on" data-view="1"' not in off and 'data-view="1" class="on"' not in off:
    bpftest.fail("the off-CPU tab is not the one shown with #view=1")

# 5. Diff colours: query_db grew (9.4% -> 77.4%), parse_json shrank, main unchanged (100%).
colour = {t: (c, bg) for c, t, bg in frames(diff)}


def rgb(bg):
    return tuple(int(x) for x in re.findall(r"\d+", bg)[:3])


for fn, cls in (("query_db", "up"), ("parse_json", "down"), ("main", "same")):
    if fn not in colour or cls not in colour[fn][0].split():
        bpftest.fail(f"diff: {fn} is not drawn as '{cls}': {colour.get(fn)}")
r, g, b = rgb(colour["query_db"][1])
if not (r > 200 and g < 200 and b < 200):
    bpftest.fail(f"diff: query_db grew but is not red: {colour['query_db'][1]}")
r, g, b = rgb(colour["parse_json"][1])
if not (b > 200 and r < 200 and g < 200):
    bpftest.fail(f"diff: parse_json shrank but is not blue: {colour['parse_json'][1]}")
print("diff colours:", {k: v for k, v in colour.items() if k in ("query_db", "parse_json", "main")})

# 6. Bad inputs: one line on stderr, exit 2.
garbage, empty, trunc, offcpu = (os.path.join(out, n) for n in ("garbage.pb.gz", "empty.folded", "trunc.pb.gz", "off.pb.gz"))
with open(garbage, "wb") as f:
    f.write(bytes(range(256)) * 8)
open(empty, "w").close()
with open(trunc, "wb") as f:
    f.write(pprof_bytes[:len(pprof_bytes) // 2])
with open(offcpu, "wb") as f:  # a pprof whose first sample type is not samples/count
    f.write(gzip.compress(bytes([0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x32, 0x00, 0x32, 0x03]) + b"off" +
                          bytes([0x32, 0x02]) + b"ns" + bytes([0x12, 0x04, 0x0a, 0x00, 0x10, 0x05])))
for bad in ([base, os.path.join(out, "missing.folded")], [garbage, new], [empty, new], [trunc, stdout_pprof],
            [base, offcpu]):
    p = bpftest.run([otelprofd, "diff"] + bad, check=False)
    if p.returncode != 2 or len(p.stderr.strip().splitlines()) != 1 or p.stdout:
        bpftest.fail(f"diff {bad}: exit {p.returncode}, stderr {p.stderr!r} (expected one line and exit 2)")
print("ok")
