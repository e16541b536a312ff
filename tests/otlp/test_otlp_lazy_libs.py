#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The libraries a run does not use are never mapped (symbolizer/dl_lib.h, docs/memory.md): an ad hoc
`-o FILE` run maps none of gRPC, libcurl, libdebuginfod and libsystemd, a gRPC exporter maps gRPC
(at its first request: not while it has had nothing to send) and not libcurl, an HTTP exporter libcurl and not gRPC (read from /proc/PID/maps of the running
daemon). With a library made unloadable (a private mount namespace where /dev/null is bound over
it): a run that needs it stops with one line naming the Debian package, never a crash, and a run
that does not need it works."""
import os
import signal
import subprocess
import time

import bpftest
import otlptest

LIBS = {"grpc": ("libgrpc.so", "libgpr.so"), "curl": ("libcurl.so", "libcurl-gnutls.so"),
        "debuginfod": ("libdebuginfod",), "systemd": ("libsystemd.so",)}


def mapped(pid):
    """Names of the LIBS keys with a file mapped in process pid."""
    names = set()
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            path = os.path.basename(line.split()[-1]) if len(line.split()) >= 6 else ""
            for key, prefixes in LIBS.items():
                if path.startswith(prefixes):
                    names.add(key)
    return names


def check_run(what, args, want, env=None, wait_for=None, settle=0):
    """Start otelprofd with args, wait until it profiles (and until wait_for is mapped, or settle
    seconds), and check that what it maps of LIBS is exactly want; stop it with SIGINT: it must exit 0."""
    cmd = [bpftest.otelprofd(), *args]
    print(f"== {what}\n$", " ".join(cmd), flush=True)
    daemon = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=env or os.environ)
    bpftest.wait_profiling(daemon, others=(sleeper,))
    rest = bpftest.drain(daemon)
    deadline = time.time() + 30
    while wait_for and wait_for not in mapped(daemon.pid) and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(settle)
    got = mapped(daemon.pid)
    time.sleep(1.5)  # an export interval or so: the exporter sends before it stops
    daemon.send_signal(signal.SIGINT)
    said = rest(120)
    print(said[-2000:])
    print(f"{what}: maps {sorted(got) or 'none'} of {sorted(LIBS)}")
    if got != set(want):
        failures.append(f"{what}: maps {sorted(got)}, expected {sorted(want)}")
    if daemon.returncode != 0:
        failures.append(f"{what}: exited {daemon.returncode}")
    if wait_for and "Export: 0 requests sent" in said:
        failures.append(f"{what}: sent nothing")


def in_namespace_without(lib, args, env=None):
    """Run otelprofd args in a private mount namespace where lib (a soname) cannot be loaded."""
    real = os.path.realpath(os.path.join("/usr/lib/x86_64-linux-gnu", lib))
    if not os.path.exists(real):
        real = subprocess.run(["sh", "-c", f"ldconfig -p | awk '$1 == \"{lib}\" {{print $NF; exit}}'"],
                              stdout=subprocess.PIPE, text=True).stdout.strip()
        real = os.path.realpath(real) if real else ""
    if not real:
        bpftest.fail(f"{lib} is not installed here (scripts/install-deps.sh installs it)")
    cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
           'mount --bind /dev/null "$0" && exec "$@"', real, bpftest.otelprofd(), *args]
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120,
                          env=env or os.environ)


bpftest.require_bpf()
out = bpftest.tmpdir()
failures = []
collector = otlptest.Collector(os.path.join(out, "collector"))
sleeper = subprocess.Popen([os.environ["SPLIT_WORKLOAD"], "600"])
target = ["--pid", str(sleeper.pid), "-d", "60s"]
no_env = {k: v for k, v in os.environ.items()
          if not k.startswith(("OTEL_", "DEBUGINFOD_", "NOTIFY_SOCKET", "KUBERNETES_"))}
try:
    check_run("-o FILE", [*target, "-o", os.path.join(out, "adhoc.pb.gz")], [], env=no_env)
    check_run("OTLP/gRPC", [*target, "--endpoint", f"127.0.0.1:{collector.grpc_port}", "--insecure",
                            "--export-interval", "1s"], ["grpc"], env=no_env, wait_for="grpc")
    idle = subprocess.Popen(["sleep", "600"])
    try:
        check_run("OTLP/gRPC, nothing to send (a sleeping process)", [
            "--pid", str(idle.pid), "-d", "60s", "--endpoint", f"127.0.0.1:{collector.grpc_port}", "--insecure",
            "--export-interval", "1s"], [], env=no_env, settle=3)
    finally:
        idle.kill()
        idle.wait()
    check_run("OTLP/HTTP", [*target, "--export-interval", "1s"], ["curl"], wait_for="curl",
              env=dict(no_env, OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
                       OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{collector.http_port}"))

    short = ["--pid", str(sleeper.pid), "-d", "1s"]
    print("== libgrpc.so.29 made unloadable", flush=True)
    p = in_namespace_without("libgrpc.so.29", [*short, "--endpoint", f"127.0.0.1:{collector.grpc_port}",
                                               "--insecure"], env=no_env)
    print(p.stderr[-2000:])
    lines = [line for line in p.stderr.splitlines() if "libgrpc" in line]
    if p.returncode <= 0 or p.returncode >= 128:
        failures.append(f"gRPC without libgrpc: exit status {p.returncode}, expected a plain failure")
    if len(lines) != 1 or "OTLP over gRPC needs libgrpc29 (libgrpc.so.29)" not in lines[0]:
        failures.append(f"gRPC without libgrpc: expected one line naming libgrpc29, got {lines}")
    for lib, name in (("libgrpc.so.29", "gRPC"), ("libcurl.so.4", "libcurl")):
        p = in_namespace_without(lib, [*short, "-o", os.path.join(out, f"without-{name}.pb.gz")], env=no_env)
        print(p.stderr[-1000:])
        if p.returncode != 0 or not os.path.getsize(os.path.join(out, f"without-{name}.pb.gz")):
            failures.append(f"-o FILE without {name}: exit status {p.returncode}, expected 0 and a file")

    print("== libcurl.so.4 made unloadable, OTLP/HTTP", flush=True)
    p = in_namespace_without("libcurl.so.4", [*short], env=dict(
        no_env, OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{collector.http_port}"))
    print(p.stderr[-2000:])
    if p.returncode <= 0 or p.returncode >= 128 or "OTLP over HTTP needs libcurl4 (libcurl.so.4)" not in p.stderr:
        failures.append(f"HTTP without libcurl: exit status {p.returncode}, expected a plain failure naming libcurl4")

    print("== libdebuginfod.so.1 made unloadable, DEBUGINFOD_URLS set", flush=True)
    p = in_namespace_without("libdebuginfod.so.1", [*short, "-o", os.path.join(out, "without-debuginfod.pb.gz")],
                             env=dict(no_env, DEBUGINFOD_URLS="http://127.0.0.1:1"))
    print(p.stderr[-2000:])
    if p.returncode != 0 or "need libdebuginfod1 (libdebuginfod.so.1)" not in p.stderr:
        failures.append(f"debuginfod without libdebuginfod: exit status {p.returncode}, expected 0 and a "
                        "warning naming libdebuginfod1")
finally:
    sleeper.kill()
    sleeper.wait()
    stats = collector.stop()

if stats["grpc_requests"] < 1 or stats["http_requests"] < 1:
    failures.append(f"the exporters sent nothing: {stats}")
if failures:
    bpftest.fail("; ".join(failures))
print("ok: each run maps only the libraries it uses")
