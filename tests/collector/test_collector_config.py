#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Collector configuration we ship, against the real OpenTelemetry Collector (v0.165.0; suite
collector):
- deploy/collector/config.yaml and deploy/kubernetes/collector-config.yaml pass the Collector's own
  `validate`, as shipped (the profiles feature gate on, as deploy/kubernetes/collector.yaml runs it);
- otelprofd (real BPF, the split workload) -> a Collector started with deploy/kubernetes's
  configuration works end to end. The test rewrites only: the otlp receiver's two endpoints
  (0.0.0.0:4317 and :4318 -> 127.0.0.1 on free ports), one exporter added to the profiles pipeline
  beside the shipped debug exporter (profilesjson, which writes what the Collector decoded), and
  service.telemetry (metrics level none: no port 8888, which tests running side by side would share;
  logs at warn). Receivers, the memory_limiter processor and the debug exporter are as shipped.
  Asserted: the samples otelprofd kept and sent all arrive, decoded with every index in range, and
  >= 90% of the workload's samples are hot_X -> caller_X -> main, each of the three there;
- the Collector's decoder (pdata) reads a request otelprofd wrote to a file (-o x.otlp) with every
  index in range and as many samples as otelprofd kept.
"""
import os
import subprocess

import yaml

import bpftest
import collectortest
import otlptest

bpftest.require_bpf()
out = bpftest.tmpdir()
ROOT = os.environ["SOURCE_ROOT"]
shipped = {name: os.path.join(ROOT, "deploy", *name.split("/"))
           for name in ("collector/config.yaml", "kubernetes/collector-config.yaml")}
for name, path in shipped.items():
    code, said = collectortest.validate(path)
    print(f"validate {name}: exit {code} {said.strip()}")
    if code != 0:
        bpftest.fail(f"the Collector's validate refuses deploy/{name}: {said}")

config = yaml.safe_load(open(shipped["kubernetes/collector-config.yaml"]))
grpc_port, http_port = otlptest.free_port(), otlptest.free_port()
protocols = config["receivers"]["otlp"]["protocols"]
protocols["grpc"]["endpoint"] = f"127.0.0.1:{grpc_port}"
protocols["http"]["endpoint"] = f"127.0.0.1:{http_port}"
received = os.path.join(out, "received.jsonl")
config["exporters"]["profilesjson"] = {"path": received}
config["service"]["pipelines"]["profiles"]["exporters"].append("profilesjson")
config["service"]["telemetry"] = collectortest.telemetry_off()
collector = collectortest.Collector(os.path.join(out, "collector"), config, [grpc_port, http_port])

work = subprocess.Popen([os.environ["SPLIT_WORKLOAD"], "30"])
try:
    cmd = [bpftest.otelprofd(), "--pid", str(work.pid), "-F", "199", "--endpoint", f"127.0.0.1:{grpc_port}",
           "--insecure", "--export-interval", "1s", "--duration", "4s", "-v"]
    daemon = bpftest.run(cmd, timeout=180)
    otlp_file = os.path.join(out, "split.otlp")
    to_file = bpftest.run([bpftest.otelprofd(), "--pid", str(work.pid), "-F", "199", "--duration", "1s", "-v",
                           "-o", otlp_file], timeout=180)
finally:
    work.kill()
    work.wait()
collector.stop()

summaries = collectortest.read_summaries(received)
print(f"{len(summaries)} requests decoded by the Collector")
collectortest.check_decoded("deploy config", summaries)
collectortest.check_totals("deploy config", summaries, daemon.stderr)
# The workload's stacks as the Collector holds them (its shares are the bpf suite's to check).
chains = {}
for attrs, p in collectortest.profiles(summaries):
    for smp in p["samples"] if attrs.get("process.pid") == work.pid else []:
        key = tuple(f["function"] for f in smp["stack"][:3])
        chains[key] = chains.get(key, 0) + collectortest.events(smp)
total = sum(chains.values())
expected = {(f"hot_{x}", f"caller_{x}", "main"): chains.get((f"hot_{x}", f"caller_{x}", "main"), 0) for x in "abc"}
print(f"the workload's {total} samples, hot -> caller -> main: {expected}")
if total < 100 or not all(expected.values()) or sum(expected.values()) < 0.9 * total:
    bpftest.fail(f"the workload's stacks as the Collector decoded them: {sorted(chains.items(), key=lambda kv: -kv[1])[:8]}")

decoded = collectortest.summarize(otlp_file)
collectortest.check_decoded("file", decoded)
in_file = sum(collectortest.events(smp) for _, p in collectortest.profiles(decoded) for smp in p["samples"])
kept = collectortest.samples_kept(to_file.stderr)
print(f"file: otelprofd kept {kept} samples, the Collector decoded {in_file} from {otlp_file}")
if in_file != kept or not kept:
    bpftest.fail(f"file: otelprofd kept {kept} samples, the Collector decoded {in_file}")
print("PASS")
