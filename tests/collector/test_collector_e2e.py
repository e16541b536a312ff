#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""End to end with the real OpenTelemetry Collector (v0.165.0, pdata v1.71.0; suite collector): two
otelprofd daemons with the real BPF programs, --off-cpu, one sending over gRPC and one over HTTP at
the same time, profile four workloads: the trace test's application (OTEP 4947 thread contexts: trace
links; OTEP 4719 process context: service.name) in a Docker-style cgroup, Debian's python3 running
the Python test's workload, the stripped Go program of the Go test, and the waits workload (off-CPU).
The Collector (one otlp receiver per transport, one pipeline each, our profilesjson exporter) writes
what it decoded. Asserted for each transport, on what the Collector decoded:
- every index resolves in its table; link_table[0] is the zero link; timestamps fall inside their
  profile's [time, time + duration);
- sample totals: the timestamps (or values) the Collector received equal the samples and waits
  otelprofd kept and sent (its end-of-run lines), and each interval's samples (its -v lines) those of
  that interval's request: nothing lost or doubled; none rejected in part;
- every frame has a function name, or is an address in a mapping that carries a build id, but at
  most 1% outside every mapping (an unwinder's last guess); none in the vDSO is left unnamed; the workloads' own functions have their file and line (C from DWARF, Python from code objects, Go from
  .gopclntab) and frame type (native, cpython, go);
- resource attributes: process.pid, process.executable.name and .path, host.name and service.name on
  every resource; service.name trace-app-svc from the process context; container.id of the Docker
  cgroup on the trace application, none on the others (not in a container cgroup);
- the link table holds the nine (trace, span) pairs of the application's workers; of the samples of
  worker-I in span_fn_J, <= 1% link to another pair and >= 50% to theirs (the others were taken
  before otelprofd read the thread's context: the trace suite holds how few);
- on-CPU profiles are samples/count with period cpu/nanoseconds 1e9/F; the off-CPU profile is
  off_cpu/nanoseconds with a value per timestamp, and holds wait_sleep, wait_pipe and wait_mutex.
"""
import glob
import os
import re
import subprocess
import time

import bpftest
import cgrouptest
import collectortest
import otlptest

bpftest.require_bpf()
out = bpftest.tmpdir()
FREQUENCY = 199
SECONDS = 6
DOCKER = "c011ec70" * 8
PYTHON_WORKLOAD = os.environ["PYTHON_WORKLOAD"]
LEAF_ADD_LINE = next(n for n, text in enumerate(open(PYTHON_WORKLOAD), 1) if "# LEAF_ADD_LINE" in text)

grpc_port, http_port = otlptest.free_port(), otlptest.free_port()
files = {t: os.path.join(out, f"{t}.jsonl") for t in ("grpc", "http")}
collector = collectortest.Collector(os.path.join(out, "collector"), {
    "receivers": {
        "otlp/grpc": {"protocols": {"grpc": {"endpoint": f"127.0.0.1:{grpc_port}"}}},
        "otlp/http": {"protocols": {"http": {"endpoint": f"127.0.0.1:{http_port}"}}},
    },
    "exporters": {f"profilesjson/{t}": {"path": path} for t, path in files.items()},
    "service": {
        "telemetry": collectortest.telemetry_off(),
        "pipelines": {f"profiles/{t}": {"receivers": [f"otlp/{t}"], "exporters": [f"profilesjson/{t}"]}
                      for t in files},
    },
}, [grpc_port, http_port])


def warm(paths):
    """Read the files once: a first read from this VM's lazily fetched disk is slow (tests/python)."""
    for f in paths:
        with open(f, "rb") as fh:
            while fh.read(1 << 20):
                pass


def vdso_of(pid):
    """The [vdso] range of a process (its frames are named from otelprofd's own vDSO image)."""
    for line in open(f"/proc/{pid}/maps"):
        if line.rstrip().endswith("[vdso]"):
            start, end = (int(x, 16) for x in line.split()[0].split("-"))
            return start, end
    return 0, 0


tree = cgrouptest.Tree(cgrouptest.v2_root())
work = {}
daemons = {}
try:
    container = tree.make(f"otelprofd-collector-{os.getpid()}/system.slice/docker-{DOCKER}.scope")
    work["trace"] = tree.start_in(container, [os.environ["TRACE_APP"], str(SECONDS + 30)])
    warm(["/usr/bin/python3", *glob.glob("/usr/lib/x86_64-linux-gnu/libpython3*.so*")])
    work["python"] = subprocess.Popen(["/usr/bin/python3", PYTHON_WORKLOAD, str(SECONDS + 30)])
    work["go"] = subprocess.Popen([os.environ["GO_WORKLOAD"], str(SECONDS + 30)], stdout=subprocess.DEVNULL)
    # It waits for a line on stdin, so that the daemons are attached before its first wait.
    work["waits"] = subprocess.Popen([os.environ["WAITS_WORKLOAD"], str(SECONDS - 2)], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, text=True)
    time.sleep(0.7)
    vdso = {p.pid: vdso_of(p.pid) for p in work.values()}
    pids = ",".join(str(p.pid) for p in work.values())
    common = ["--pid", pids, "-F", str(FREQUENCY), "--off-cpu", "--off-cpu-probability", "1",
              "--export-interval", "1s", "--duration", f"{SECONDS}s", "-v"]
    for transport, endpoint in (("grpc", ["--endpoint", f"127.0.0.1:{grpc_port}", "--insecure"]),
                                ("http", ["--endpoint", f"http://127.0.0.1:{http_port}",
                                          "--protocol", "http/protobuf"])):
        cmd = [bpftest.otelprofd(), *common, *endpoint]
        print("$", " ".join(cmd), flush=True)
        daemons[transport] = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    logs = {t: bpftest.wait_profiling(d, others=[*work.values(), *daemons.values()]) for t, d in daemons.items()}
    # Both daemons' stderr read at once: one waited on first would leave the other's pipe full.
    rests = {t: bpftest.drain(d) for t, d in daemons.items()}
    work["waits"].stdin.write("go\n")
    work["waits"].stdin.flush()
    for t, rest in rests.items():
        logs[t] += rest()
finally:
    for p in [*daemons.values(), *work.values()]:
        if p.poll() is None:
            p.kill()
        p.wait()
    tree.remove()
for t, d in daemons.items():
    if d.returncode != 0:
        print(logs[t][-4000:])
        bpftest.fail(f"{t}: otelprofd exited {d.returncode}")
collector.stop()

pid_of = {name: p.pid for name, p in work.items()}
WORKER_FN = re.compile(r"^span_fn_(\d)$")


def frames_named(profs, function):
    return [f for _, p in profs for smp in p["samples"] for f in smp["stack"] if f["function"] == function]


def check_frames(t, profs):
    """Names for every frame, file:line and frame types for the workloads' own functions."""
    frames = in_vdso = unmapped = 0
    for attrs, p in profs:
        low, high = vdso[attrs["process.pid"]]
        for f in (f for smp in p["samples"] for f in smp["stack"]):
            frames += 1
            if f["function"] or (f["no_symbols"] and any(
                    k.startswith("process.executable.build_id.") for k in (f["mapping_attrs"] or {}))):
                continue
            if not f["no_symbols"] or f["mapping"]:
                bpftest.fail(f"{t}: a frame in a mapping with neither a name nor a build id: {f}")
            # Not in a mapping: an unwinder's guess past the last frame it could trust (a few per
            # thousand). Never the vDSO, which is named (docs/symbols.md).
            if low <= f["address"] < high:
                in_vdso += 1
            else:
                unmapped += 1
    print(f"{t}: of {frames} frames, all named or an address in a mapping with a build id but {in_vdso} in the "
          f"vDSO and {unmapped} outside every mapping")
    if in_vdso:
        bpftest.fail(f"{t}: {in_vdso} frames in the vDSO without a name")
    if unmapped > 0.01 * frames:
        bpftest.fail(f"{t}: {in_vdso} frames in the vDSO and {unmapped} outside every mapping, of {frames}")
    mine = {name: [(a, p) for a, p in profs if a.get("process.pid") == pid] for name, pid in pid_of.items()}
    wants = (("trace", "span_fn_1", "trace-app.c", None, "native"),
             ("python", "leaf_add", os.path.basename(PYTHON_WORKLOAD), LEAF_ADD_LINE, "cpython"),
             ("go", "main.hotLoop", "gohot.go", None, "go"),
             ("waits", "compute_only", "waits.c", None, "native"))
    for name, function, source, line, ftype in wants:
        frames = frames_named(mine[name], function)
        bad = [f for f in frames if not f["file"].endswith(source) or f["line"] <= 0 or
               f["attributes"].get("profile.frame.type") != ftype]
        at_line = sum(1 for f in frames if line is None or f["line"] == line)
        print(f"{t}: {name}: {len(frames)} {function} frames, {len(bad)} without {source}:line or type {ftype}, "
              f"{at_line} at the expected line")
        if not frames or bad or at_line < 0.5 * len(frames):
            bpftest.fail(f"{t}: {name}: {function} frames {len(frames)}, wrong {bad[:2]}, {at_line} at line {line}")
    return mine


def check_resources(t, mine):
    for name, rp in mine.items():
        if not rp:
            bpftest.fail(f"{t}: no profile of the {name} workload ({pid_of[name]})")
        for attrs, _ in rp:
            missing = [k for k in ("process.pid", "process.executable.name", "process.executable.path",
                                   "host.name", "service.name") if not attrs.get(k)]
            if missing or not isinstance(attrs["process.pid"], int):
                bpftest.fail(f"{t}: {name}: resource attributes {attrs} (missing {missing})")
            if attrs.get("container.id") != (DOCKER if name == "trace" else None):
                bpftest.fail(f"{t}: {name}: container.id {attrs.get('container.id')}")
    service = mine["trace"][-1][0]["service.name"]
    print(f"{t}: trace application: service.name {service}, container.id {mine['trace'][-1][0]['container.id']}")
    if service != "trace-app-svc":
        bpftest.fail(f"{t}: the trace application's service.name is {service}, not trace-app-svc")


def check_links(t, summaries, mine):
    def expected(worker, span):
        return {"trace_id": ("%02x" % (0x10 + worker)) * 15 + "01",
                "span_id": "%02x%02x010203040506" % (0xa0 + worker, 0xb0 + span)}
    table = [link for s in summaries for link in s["links"]]
    total = right = wrong = 0
    # Link indices are per request: resolve each sample in its own request's table.
    for s in summaries:
        for r in s["resources"]:
            if r["attributes"].get("process.pid") != pid_of["trace"]:
                continue
            for p in (p for sc in r["scopes"] for p in sc["profiles"] if p["sample_type"]["type"] == "samples"):
                for smp in p["samples"]:
                    thread = smp["attributes"].get("thread.name", "")
                    fn = next((m for f in smp["stack"] for m in [WORKER_FN.match(f["function"])] if m), None)
                    if not thread.startswith("worker-") or not fn:
                        continue
                    n = collectortest.events(smp)
                    total += n
                    if smp["link_index"]:
                        want = expected(int(thread[len("worker-"):]), int(fn.group(1)))
                        right += n * (s["links"][smp["link_index"]] == want)
                        wrong += n * (s["links"][smp["link_index"]] != want)
    pairs = [expected(w, j) for w in range(3) for j in range(3)]
    print(f"{t}: of {total} samples of the workers' spans, {right} link to their span, {wrong} to another")
    if any(pair not in table for pair in pairs):
        bpftest.fail(f"{t}: the link tables lack some of the workers' spans: {[p for p in pairs if p not in table]}")
    # A wrong link is a garbled table or index; a sample without one was taken before otelprofd read
    # the thread's context (the trace suite holds how few).
    if wrong > 0.01 * total or right < 20 or right < 0.5 * total:
        bpftest.fail(f"{t}: of {total} samples in span_fn_N, {right} link to their span and {wrong} to another")


def check_types(t, profs, mine):
    for attrs, p in profs:
        kind = (p["sample_type"]["type"], p["sample_type"]["unit"])
        if kind == ("samples", "count"):
            if (p["period_type"], p["period"]) != ({"type": "cpu", "unit": "nanoseconds"}, 10**9 // FREQUENCY):
                bpftest.fail(f"{t}: on-CPU period {p['period_type']} {p['period']}")
            if any(smp["values"] for smp in p["samples"]):
                bpftest.fail(f"{t}: an on-CPU sample with values")
        elif kind == ("off_cpu", "nanoseconds"):
            if any(len(smp["values"]) != len(smp["timestamps"]) for smp in p["samples"]):
                bpftest.fail(f"{t}: an off-CPU sample without a value per timestamp")
        else:
            bpftest.fail(f"{t}: a profile of sample type {kind}")
    off = [p for _, p in mine["waits"] if p["sample_type"]["type"] == "off_cpu"]
    functions = {f["function"] for p in off for smp in p["samples"] for f in smp["stack"]}
    waited = sum(v for p in off for smp in p["samples"] for v in smp["values"])
    print(f"{t}: waits: {len(off)} off-CPU profiles, {waited / 1e9:.2f} s off CPU")
    missing = {"wait_sleep", "wait_pipe", "wait_mutex"} - functions
    if not off or missing:
        bpftest.fail(f"{t}: the off-CPU profiles of the waits workload lack {sorted(missing)}")


for t, path in files.items():
    # What each stage counted (-v), for a failure's diagnosis.
    print("\n".join(line for line in logs[t].splitlines() if "debug: Interval" not in line)[-6000:])
    summaries = collectortest.read_summaries(path)
    print(f"== {t}: {len(summaries)} requests decoded by the Collector")
    if not summaries:
        bpftest.fail(f"{t}: the Collector wrote nothing:\n" + collector.log())
    collectortest.check_decoded(t, summaries)
    collectortest.check_totals(t, summaries, logs[t])
    profs = collectortest.profiles(summaries)
    mine = check_frames(t, profs)
    check_resources(t, mine)
    check_links(t, summaries, mine)
    check_types(t, profs, mine)
print("PASS")
