# SPDX-License-Identifier: Apache-2.0
"""Helpers of the OTLP end-to-end tests: the test collector program, decoding what it saved with
otlp-dump, and summing samples per leaf function."""
import atexit
import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import bpftest


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for_port(port, timeout=10):
    """Wait until something accepts connections on 127.0.0.1:port."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    bpftest.fail(f"nothing listens on 127.0.0.1:{port}")


_running = []


def ended_at_exit(proc):
    """Kill proc at this test's exit if it still runs then (a failure exits between start and stop)."""
    _running.append(proc)
    return proc


@atexit.register
def _kill_left_running():
    """A test that fails (sys.exit) between a start and its stop leaves no collector behind."""
    for proc in _running:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


class Collector:
    """The test collector as a child process on 127.0.0.1."""

    def __init__(self, out_dir, *args):
        os.makedirs(out_dir, exist_ok=True)
        self.out_dir = out_dir
        ports = os.path.join(out_dir, "ports")
        if os.path.exists(ports):
            os.unlink(ports)
        cmd = [os.environ["TEST_COLLECTOR"], "--out", out_dir, "--ports-file", ports, *args]
        print("$", " ".join(cmd), flush=True)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ended_at_exit(self.proc)
        deadline = time.time() + 10
        while not os.path.exists(ports):
            if self.proc.poll() is not None or time.time() > deadline:
                bpftest.fail("the test collector did not start: " + self.proc.stderr.read())
            time.sleep(0.05)
        self.grpc_port, self.http_port = (int(x) for x in open(ports).read().split())

    def stop(self, sig=signal.SIGTERM):
        """Stop it; its counters (None when killed)."""
        self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=30)
        sys.stdout.write(err[-3000:])
        if sig != signal.SIGTERM:
            return None
        stats = json.loads(out.strip().splitlines()[-1])
        print("collector:", stats)
        return stats


def dump(pattern):
    """otlp-dump summaries of the saved requests matching pattern, in order."""
    files = sorted(glob.glob(pattern))
    if not files:
        return []
    p = subprocess.run([os.environ["OTLP_DUMP"], *files], stdout=subprocess.PIPE, text=True)
    return [json.loads(line) for line in p.stdout.splitlines()]


def received(daemon, log, collector, pid):
    """After a run that exported to collector: the daemon exited 0 and every request was valid. The
    resources of process pid, over all requests, in order."""
    print(log[-3000:])
    if daemon.returncode != 0:
        bpftest.fail(f"otelprofd exited {daemon.returncode}")
    stats = collector.stop()
    if stats["invalid"]:
        bpftest.fail(f"{stats['invalid']} requests broke the format: {stats['last_error']}")
    summaries = dump(os.path.join(collector.out_dir, "*-grpc.pb"))
    print(f"{len(summaries)} requests")
    for s in summaries:
        if not s["valid"]:
            bpftest.fail(f"invalid request: {s['why']}")
    mine = [r for s in summaries for r in s["resources"] if r["attributes"].get("process.pid") == pid]
    if not mine:
        bpftest.fail("no resource of the workload arrived")
    return mine


def samples_of(summaries, pid):
    """Every sample entry of the process pid, over all requests."""
    out = []
    for s in summaries:
        for r in s.get("resources", []):
            if r["attributes"].get("process.pid") != pid:
                continue
            for scope in r["scopes"]:
                for prof in scope["profiles"]:
                    out.extend(prof["sample_list"])
    return out


def check_split_shares(samples, slack=5):
    """The 60/30/10 split of the workload, by leaf function."""
    total = sum(s["count"] for s in samples)
    if total < 300:
        bpftest.fail(f"only {total} samples of the workload arrived")
    leaf = {}
    for s in samples:
        name = s["stack"][0] if s["stack"] else ""
        leaf[name] = leaf.get(name, 0) + s["count"]
    for name, want in (("hot_a", 60), ("hot_b", 30), ("hot_c", 10)):
        share = 100.0 * leaf.get(name, 0) / total
        print(f"{name}: {share:.1f}% of {total} (expected {want}%)")
        if abs(share - want) > slack:
            bpftest.fail(f"{name} has {share:.1f}% of {total} samples, expected {want} +- {slack}")
    chains = sum(s["count"] for s in samples if s["stack"][:3] in (["hot_a", "caller_a", "main"],
                                                                  ["hot_b", "caller_b", "main"],
                                                                  ["hot_c", "caller_c", "main"]))
    if chains < 0.9 * total:
        bpftest.fail(f"only {chains} of {total} samples have the chain hot -> caller -> main")
    return total


def rss_env():
    """The environment for a daemon whose RSS a test bounds. Under ASan, freed blocks wait in a
    quarantine of up to 256 MiB before reuse, so RSS would follow the quarantine, not what the daemon
    holds: a small one keeps use-after-free checks on recent frees and lets RSS mean live memory.
    Without ASan the variable is unused."""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS", ""), "quarantine_size_mb=4"]))
    return env


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Daemon:
    """otelprofd as a child process with its log in a file and /metrics on a free loopback port."""

    def __init__(self, log_path, args):
        self.log_path = log_path
        cmd = [bpftest.otelprofd(), "--metrics-address", f"127.0.0.1:{bpftest.free_port()}", *args]
        print("$", " ".join(cmd), flush=True)
        self.proc = subprocess.Popen(cmd, stderr=open(log_path, "w"), env=rss_env())
        ended_at_exit(self.proc)
        self.pid = self.proc.pid
        self.rss = []
        self.metrics_port = None
        deadline = time.time() + 30
        while self.metrics_port is None:
            m = re.search(r"Metrics on port (\d+)", open(log_path).read())
            if m:
                self.metrics_port = int(m.group(1))
            elif self.proc.poll() is not None or time.time() > deadline:
                bpftest.fail("otelprofd did not serve metrics:\n" + open(log_path).read()[-3000:])
            else:
                time.sleep(0.05)

    def metrics(self):
        """/metrics as {series: value}."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as r:
            text = r.read().decode()
        values = {}
        for line in text.splitlines():
            m = re.match(r"^(otelprofd_[a-z0-9_]+(?:\{[^}]*\})?) ([0-9.e+-]+)$", line)
            if m:
                values[m.group(1)] = float(m.group(2))
        return values

    def watch(self, seconds, every=0.25, on_sample=None):
        """Check for `seconds` that the daemon lives, recording its RSS (KiB); on_sample(metrics) each time
        when given."""
        end = time.time() + seconds
        while time.time() < end:
            if self.proc.poll() is not None:
                bpftest.fail(f"otelprofd exited {self.proc.returncode}:\n" + self.log()[-3000:])
            self.rss.append(rss_kib(self.pid))
            if on_sample:
                on_sample(self.metrics())
            time.sleep(every)

    def stop(self, timeout=30):
        """SIGTERM; its exit code."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def log(self):
        return open(self.log_path).read()
