#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Go pprof labels (suite go-labels): the labels of the running goroutine are on its samples.

golabels (tests/integration/programs/golabels) is an HTTP server on 127.0.0.1 whose handlers run
their CPU work under pprof.Do(endpoint=/a or /b, kind=cpu): /a in main.workA, /b in main.workB,
with clients in the same process. It is built stripped (-ldflags='-s -w': no symbols, no DWARF) by
Debian's Go 1.19 (the map[string]string label layout) and by Go 1.26 (the slice layout; from
scripts/go-toolchain.sh), without cgo, and by Go 1.26 with cgo (libc's resolver: the g is in the
executable's TLS block), cached under /var/tmp. All run at once under one otelprofd exporting OTLP
to the test collector and one writing pprof. For each build, of the samples in workA (workB):
>= 95% carry endpoint=/a (/b) and kind=cpu, none carries the other endpoint; the OTLP samples carry
them as sample attributes, with no trace link (the labels have no span); pprof as labels, without
trace_id/span_id. workC runs under 10 labels, one value 100 bytes long: its samples carry 8 at most
(Go 1.26: the first 8 by key, the long value cut to 64 bytes; Go 1.19: those in the label map's
first bucket), and the self-metrics count the labels dropped and cut, as well as the
Go processes and the labelled samples. Those runs load the label reader at start
(OTELPROFD_RUNTIMES_AT_START=1); by default it loads at the first Go process
(daemon/sampling/runtime_bpf.h): a Go 1.26 build exec'd by a shell 2 s after the daemon started
profiling it gets the same labels (>= 80% of workA/workB samples: those taken while the reader
loads have none), the reader loaded after the daemon's start, within its bound of verified
instructions.
"""
import atexit
import os
import re
import subprocess
import sys
import time

import bpftest
import gobuild
import otlptest
import pprofdecode

bpftest.require_bpf()
os.environ["OTELPROFD_RUNTIMES_AT_START"] = "1"
SOURCE = os.environ["GOLABELS_SOURCE"]
TOOLCHAIN = os.environ["GO_TOOLCHAIN_SCRIPT"]
CACHE = os.environ.get("OTELPROFD_GOLABELS_CACHE", "/var/tmp/otelprofd-golabels")
RIGHT = 0.95
WORK = {"main.workA": "/a", "main.workB": "/b"}
FUNCTIONS = set(WORK) | {"main.workC"}
out = bpftest.tmpdir()


def build(version, go, cgo):
    """The stripped binary of the program by this compiler, built once per source and compiler."""
    # 15 bytes at most: the process name tells the builds apart.
    path = os.path.join(gobuild.cache_dir(CACHE, go, SOURCE), f"gl-{version}-{'cgo' if cgo else 'go'}")
    if not os.access(path, os.X_OK):
        gobuild.build(go, version, SOURCE, CACHE, path, ldflags=["-ldflags=-s -w"], cgo=cgo)
    return path


go = gobuild.compilers(TOOLCHAIN)
if not go:
    bpftest.skip("no Go compiler: neither Debian's Go 1.19 nor Go 1.26")
binaries = {}
for version, path in go.items():
    binaries[f"gl-{version}-go"] = build(version, path, False)
    if version == "1.26":
        binaries[f"gl-{version}-cgo"] = build(version, path, True)
for name, path in binaries.items():
    print(f"{name}: {path}")

collector = otlptest.Collector(os.path.join(out, "collector"))
# Not left running when the test stops early (a failure, an exception).
atexit.register(lambda: collector.proc.poll() is None and collector.proc.kill())
procs = {name: subprocess.Popen([path, "30"], stdout=subprocess.DEVNULL) for name, path in binaries.items()}
pprof_path = os.path.join(out, "go.pb.gz")
pids = ",".join(str(p.pid) for p in procs.values())
daemon = pprof = None
try:
    time.sleep(1)
    daemon = otlptest.Daemon(os.path.join(out, "otlp.log"), [
        "--pid", pids, "-F", "499", "--endpoint", f"127.0.0.1:{collector.grpc_port}", "--insecure",
        "--export-interval", "1s", "-d", "60s", "-v"])
    pprof_log = open(os.path.join(out, "pprof.log"), "w")
    pprof = subprocess.Popen([bpftest.otelprofd(), "--pid", pids, "-F", "499", "-d", "8s", "-v", "-o", pprof_path],
                             stderr=pprof_log)
    daemon.watch(8)
    metrics = daemon.metrics()
    if daemon.stop() != 0:
        bpftest.fail("the OTLP otelprofd failed:\n" + daemon.log()[-3000:])
    if pprof.wait(timeout=60) != 0:
        bpftest.fail("the pprof otelprofd failed:\n" + open(os.path.join(out, "pprof.log")).read()[-3000:])
finally:
    for p in procs.values():
        p.kill()
        p.wait()
    for d in (daemon, ):
        if d:
            d.kill()
    if pprof and pprof.poll() is None:
        pprof.kill()
        pprof.wait()
print("\n".join(line for line in daemon.log().splitlines() if "go labels:" in line or "Go labels" in line))
series = {k: v for k, v in metrics.items() if "_go_" in k}
print("metrics:", series)
failures = []
READ = 'otelprofd_go_processes_total{result="labels_read"}'
if metrics.get(READ, 0) < len(binaries):
    failures.append(f"{metrics.get(READ)} Go processes read, want {len(binaries)}")
for key, least in (("otelprofd_go_labels_total", 100), ('otelprofd_go_labels_dropped_total{reason="over_bound"}', 1),
                   ("otelprofd_go_labels_cut_total", 1)):
    if metrics.get(key, 0) < least:
        failures.append(f"{key} is {metrics.get(key)}, want >= {least}")
C_KEYS = {"endpoint", "body"} | {f"l{i}" for i in range(1, 9)}


def check(where, name, samples, right_share=RIGHT):
    """samples: [(function in WORK or None, {label: value}, count)] of one build; right_share: the
    share of each function's samples that must carry its labels."""
    for fn, endpoint in WORK.items():
        mine = [(labels, c) for f, labels, c in samples if f == fn]
        total = sum(c for _, c in mine)
        right = sum(c for labels, c in mine if labels.get("endpoint") == endpoint and labels.get("kind") == "cpu")
        wrong = sum(c for labels, c in mine if labels.get("endpoint") not in (None, endpoint))
        print(f"{where} {name}: {right} of {total} {fn} samples carry endpoint={endpoint}, {wrong} another endpoint")
        if total < 100 or right < right_share * total or wrong:
            failures.append(f"{where} {name}: {fn}: {right} of {total} labelled right, {wrong} wrong")
    # workC: 10 labels. Go 1.24+ (a slice sorted by key): the first 8, body's value cut to 64 bytes.
    # Go <= 1.23 (a map): those of the map's first bucket (of two), 8 at most.
    slice_layout = not name.startswith("gl-1.19")
    mine = [(labels, c) for f, labels, c in samples if f == "main.workC"]
    keys = [{k for k in labels if k in C_KEYS or k == "kind"} for labels, _ in mine]
    over = [k for k in keys if len(k) > 8 or "kind" in k]
    bodies = {labels["body"] for labels, _ in mine if "body" in labels}
    want = 8 if slice_layout else 1
    labelled = sum(c for (labels, c), k in zip(mine, keys) if len(k) >= want)
    total = sum(c for _, c in mine)
    print(f"{where} {name}: {labelled} of {total} main.workC samples carry {want}{'' if slice_layout else '+'} of "
          f"its 10 labels; body values {bodies}")
    if (total < 20 or labelled < right_share * total or over or bodies - {"v" * 64} or
            (slice_layout and not bodies)):
        failures.append(f"{where} {name}: main.workC: {labelled} of {total} with {want} labels, {len(over)} with "
                        f"more or another's, body values {bodies}")

# pprof: labels endpoint and kind; no trace_id (the labels have no span).
by_build = {name: [] for name in binaries}
for labels, frames, value in pprofdecode.samples(pprof_path, frames=True):
    fn = next((f for f in frames if f in FUNCTIONS), None)
    comm = labels.get("process.executable.name") or labels.get("process.command")
    for b in binaries:
        if comm and comm.startswith(b[:15]):
            by_build[b].append((fn, labels, value))
    if "trace_id" in labels or "span_id" in labels:
        failures.append(f"pprof: a sample has a trace link: {labels}")
        break
for name, samples in by_build.items():
    check("pprof", name, samples)

# OTLP: sample attributes, no link.
stats = collector.stop()
if stats["invalid"]:
    failures.append(f"{stats['invalid']} requests broke the format: {stats['last_error']}")
summaries = otlptest.dump(os.path.join(collector.out_dir, "*.pb"))
for name, p in procs.items():
    samples = []
    for s in otlptest.samples_of(summaries, p.pid):
        fn = next((f for f in s["stack"] if f in FUNCTIONS), None)
        samples.append((fn, s["attributes"], s["count"]))
        if "trace_id" in s or "span_id" in s:
            failures.append(f"OTLP {name}: a sample has a trace link: {s}")
            break
    check("OTLP", name, samples)

# The label reader loaded at the first Go process (the default): one that starts after the daemon.
del os.environ["OTELPROFD_RUNTIMES_AT_START"]
late_build = "gl-1.26-go" if "gl-1.26-go" in binaries else next(iter(binaries))
late_path = os.path.join(out, "late.pb.gz")
late = subprocess.Popen(["sh", "-c", f"sleep 2; exec {binaries[late_build]} 30"], stdout=subprocess.DEVNULL)
try:
    p = bpftest.run([bpftest.otelprofd(), "--pid", str(late.pid), "-F", "499", "-d", "10s", "-v", "-o", late_path])
finally:
    late.kill()
    late.wait()
said = [line for line in p.stderr.splitlines() if "BPF part go" in line or "Profiling" in line or "go labels:" in line]
print("\n".join(said))
loaded = next((i for i, line in enumerate(said) if "BPF part go (go_read_labels) loaded" in line), None)
if loaded is None or loaded < next((i for i, line in enumerate(said) if "Profiling" in line), len(said)):
    failures.append("late: the Go label reader was not loaded after the daemon started profiling")
else:  # about 3,500 instructions for the verifier
    m = re.search(r" (\d+) instructions verified", said[loaded])
    if not m or not 0 < int(m.group(1)) <= 5000:
        failures.append(f"late: the Go label reader's instructions verified not within (0, 5000]: {said[loaded]}")
late_samples = []
for labels, frames, value in pprofdecode.samples(late_path, frames=True):
    comm = labels.get("process.executable.name") or labels.get("process.command")
    if comm and comm.startswith(late_build[:15]):
        late_samples.append((next((f for f in frames if f in FUNCTIONS), None), labels, value))
# The samples taken while the reader loads (its first process's, once) have no labels: 10-30 ms of
# CPU, but up to a second on a loaded machine, of the 8 s the program runs.
check("late", late_build, late_samples, right_share=0.8)

if failures:
    print("".join(line for line in open(os.path.join(out, "pprof.log")) if "libbpf" not in line)[-3000:])
    bpftest.fail("; ".join(failures))
print("PASS")
sys.exit(0)
