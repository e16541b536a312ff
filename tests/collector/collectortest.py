# SPDX-License-Identifier: Apache-2.0
"""Helpers of the suite collector: the real OpenTelemetry Collector (tests/collector, built once per
machine by scripts/build-collector.sh) as a child process on 127.0.0.1, what its profilesjson
exporter wrote (one JSON summary per request: summary.go), and what otelprofd said it sent."""
import atexit
import json
import os
import re
import subprocess
import sys
import time

import bpftest
import otlptest

FEATURE_GATE = "--feature-gates=+service.profilesSupport"


def binary():
    """The Collector's path, building it when this machine has none for this tree (minutes, once)."""
    p = subprocess.run([os.environ["BUILD_COLLECTOR"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sys.stdout.write(p.stderr[-3000:])
    if p.returncode != 0:
        bpftest.fail(f"scripts/build-collector.sh exited {p.returncode}")
    return p.stdout.strip()


def validate(config):
    """The Collector's own `validate` of a configuration file: (exit code, what it said)."""
    p = subprocess.run([binary(), "validate", f"--config={config}", FEATURE_GATE], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    return p.returncode, p.stdout


def summarize(otlp_file):
    """The Collector's decoding (pdata) of a file holding one request (otelprofd -o x.otlp)."""
    p = subprocess.run([binary(), "summarize", otlp_file], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60)
    if p.returncode != 0:
        bpftest.fail(f"the Collector could not decode {otlp_file}: {p.stderr}")
    return [json.loads(line) for line in p.stdout.splitlines()]


class Collector:
    """The Collector with a configuration (a dict, written as JSON, which YAML reads), on 127.0.0.1."""

    def __init__(self, out_dir, config, ports):
        os.makedirs(out_dir, exist_ok=True)
        self.config_path = os.path.join(out_dir, "config.yaml")
        with open(self.config_path, "w") as f:
            json.dump(config, f, indent=1)
        self.log_path = os.path.join(out_dir, "collector.log")
        cmd = [binary(), f"--config={self.config_path}", FEATURE_GATE]
        print("$", " ".join(cmd), flush=True)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(self.log_path, "w"))
        atexit.register(self.kill)  # a test that fails leaves no Collector listening
        for port in ports:
            # A first start on a cold disk reads a 50 MiB binary: a generous deadline.
            otlptest.wait_for_port(port, timeout=60)
            if self.proc.poll() is not None:
                bpftest.fail("the Collector exited:\n" + self.log())

    def log(self):
        return open(self.log_path).read()[-4000:]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self):
        """SIGTERM (its exporters close their files); fails when it does not exit 0."""
        self.proc.terminate()
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            bpftest.fail("the Collector did not stop within 60 s of SIGTERM")
        if code != 0:
            bpftest.fail(f"the Collector exited {code}:\n" + self.log())


def telemetry_off():
    """The Collector's own telemetry, quiet and without its metrics port (8888: tests run side by side)."""
    return {"metrics": {"level": "none"}, "logs": {"level": "warn"}}


def read_summaries(path):
    """The summaries the profilesjson exporter wrote to path, one per request, in order."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def events(sample):
    """What one Sample counts: a timestamp each, or a value each when it has no timestamps."""
    return len(sample["timestamps"]) or len(sample["values"])


def profiles(summaries):
    """(resource attributes, profile) of every profile, over all requests."""
    return [(r["attributes"], p) for s in summaries for r in s["resources"] for sc in r["scopes"]
            for p in sc["profiles"]]


def samples_kept(log):
    """The samples otelprofd kept, as its end-of-run line says."""
    kept = re.search(r"otelprofd: (\d+) samples kept, \d+ dropped", log)
    if not kept:
        bpftest.fail("otelprofd did not say how many samples it kept:\n" + log[-3000:])
    return int(kept.group(1))


def daemon_counts(log):
    """What otelprofd's end-of-run lines say: on-CPU samples kept, off-CPU waits kept (--off-cpu), and
    the samples (both) in the requests it sent and dropped."""
    sent = re.search(r"Export: (\d+) requests? sent \((\d+) samples.*?; dropped: .*?\((\d+) samples\)", log)
    if not sent:
        bpftest.fail("otelprofd did not say what it sent:\n" + log[-3000:])
    waits = re.search(r"Off-CPU: (\d+) waits? kept", log)
    partial = re.search(r"(\d+) profiles rejected in part", log)
    return {"kept": samples_kept(log), "waits": int(waits.group(1)) if waits else 0, "requests": int(sent.group(1)),
            "sent": int(sent.group(2)), "export_dropped": int(sent.group(3)),
            "rejected_in_part": int(partial.group(1)) if partial else -1}


def check_totals(name, summaries, log):
    """Nothing lost or doubled: the Collector received exactly the samples (on-CPU) and waits (off-CPU)
    that otelprofd kept and sent."""
    counts = daemon_counts(log)
    got = {}
    for _, p in profiles(summaries):
        kind = p["sample_type"]["type"]
        got[kind] = got.get(kind, 0) + sum(events(smp) for smp in p["samples"])
    want = {"samples": counts["kept"], "off_cpu": counts["waits"]}
    print(f"{name}: otelprofd kept {counts['kept']} samples and {counts['waits']} waits, sent "
          f"{counts['sent']} in {counts['requests']} requests; the Collector received {got} in "
          f"{len(summaries)} requests")
    if counts["rejected_in_part"] != 0:
        bpftest.fail(f"{name}: the Collector rejected profiles in part (or otelprofd did not say):\n" + log[-3000:])
    if counts["export_dropped"] or counts["sent"] != counts["kept"] + counts["waits"] or \
            {k: v for k, v in got.items() if v} != {k: v for k, v in want.items() if v}:
        bpftest.fail(f"{name}: otelprofd kept {want} and sent {counts['sent']} ({counts['export_dropped']} "
                     f"dropped); the Collector received {got}")
    check_intervals(name, summaries, log)
    return got


def check_intervals(name, summaries, log):
    """Interval by interval: each interval's on-CPU samples (otelprofd -v: "Interval N: S samples in R
    requests") are those of its R requests as the Collector received them, in order."""
    per_request = [sum(events(smp) for r in s["resources"] for sc in r["scopes"] for p in sc["profiles"]
                       if p["sample_type"]["type"] == "samples" for smp in p["samples"]) for s in summaries]
    intervals = [(int(n), int(c), int(r)) for n, c, r in
                 re.findall(r"Interval (\d+): (\d+) samples in (\d+) requests?", log)]
    at = 0
    for n, count, requests in intervals:
        got = sum(per_request[at:at + requests])
        if got != count:
            bpftest.fail(f"{name}: interval {n}: otelprofd counted {count} samples, the Collector received {got} "
                         f"in requests {at + 1}..{at + requests}")
        at += requests
    if not intervals or at != len(summaries):
        bpftest.fail(f"{name}: otelprofd logged {len(intervals)} intervals in {at} requests, the Collector "
                     f"received {len(summaries)} requests")
    print(f"{name}: each of the {len(intervals)} intervals' samples arrived: {[c for _, c, _ in intervals]}")


def check_decoded(name, summaries):
    """Every index resolved in its table, every sample's timestamps inside its profile's window, and
    its attributes those otelprofd puts on every sample."""
    for s in summaries:
        if s["errors"]:
            bpftest.fail(f"{name}: the Collector's data has indices out of range: {s['errors'][:5]}")
        if not s["links"] or s["links"][0] != {"trace_id": "0" * 32, "span_id": "0" * 16}:
            bpftest.fail(f"{name}: link table element 0 is not the zero link: {s['links'][:1]}")
    for _, p in profiles(summaries):
        start, end = p["time_unix_nano"], p["time_unix_nano"] + p["duration_nano"]
        if not start or not p["duration_nano"]:
            bpftest.fail(f"{name}: a profile without its time or duration: {p['time_unix_nano']} {p['duration_nano']}")
        on_cpu = p["sample_type"]["type"] == "samples"
        for smp in p["samples"]:
            # What a receiver on other numbering garbles silently (Collector v0.147.0 reads our
            # attribute_indices as values and link_index as attribute_indices).
            a = smp["attributes"]
            if not isinstance(a.get("thread.id"), int) or not isinstance(a.get("cpu.logical_number"), int) or \
                    "thread.name" not in a or (on_cpu and smp["values"]):
                bpftest.fail(f"{name}: a sample's attributes {a} and values {smp['values'][:5]}: thread.id, "
                             f"thread.name, cpu.logical_number expected{', no values' if on_cpu else ''}")
            outside = [t for t in smp["timestamps"] if not start <= t < end]
            if outside:
                bpftest.fail(f"{name}: timestamps {outside[:3]} outside the profile's [{start}, {end})")
            if not events(smp):
                bpftest.fail(f"{name}: a sample with neither timestamps nor values")
