#!/usr/bin/env python3
"""TLS: the test collector serves gRPC with a certificate this test makes with openssl and checks a
header. otelprofd (real sampler) verifies the collector with that CA and sends the header, first by
flags, then by OTEL_EXPORTER_OTLP_CERTIFICATE / OTEL_EXPORTER_OTLP_HEADERS; then a wrong header is
refused (UNAUTHENTICATED, a permanent error: logged, not retried) and an unknown CA never gets
through. HTTP over TLS goes through socat terminating TLS with the same certificate in front of the
collector's HTTP receiver."""
import os
import subprocess

import bpftest
import otlptest

bpftest.require_bpf()
out = bpftest.tmpdir()
cert, key = os.path.join(out, "cert.pem"), os.path.join(out, "key.pem")
bpftest.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", cert])
other_cert, other_key = os.path.join(out, "other.pem"), os.path.join(out, "other-key.pem")
bpftest.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=other",
             "-keyout", other_key, "-out", other_cert])

collector = otlptest.Collector(os.path.join(out, "collector"), "--cert", cert, "--key", key,
                               "--require-header", "x-api-key=s3cret")
endpoint = f"https://127.0.0.1:{collector.grpc_port}"
tls_port = otlptest.free_port()
socat = subprocess.Popen(["socat", f"OPENSSL-LISTEN:{tls_port},bind=127.0.0.1,reuseaddr,fork,cert={cert},"
                          f"key={key},verify=0", f"TCP:127.0.0.1:{collector.http_port}"])
otlptest.wait_for_port(tls_port)
workload = subprocess.Popen([os.environ["SPLIT_WORKLOAD"], "30"])
base = [bpftest.otelprofd(), "--pid", str(workload.pid), "-F", "199", "--export-interval", "1s", "-d", "3s",
        "--timeout", "2s"]


def run(extra, env=None):
    print("$", " ".join(base + extra), flush=True)
    p = subprocess.run(base + extra, env=dict(os.environ, **(env or {})), stderr=subprocess.PIPE, text=True,
                       timeout=60)
    print(p.stderr[-2000:])
    if p.returncode != 0:
        bpftest.fail(f"otelprofd exited {p.returncode}")
    return p.stderr


try:
    run(["--endpoint", endpoint, "--ca-file", cert, "--headers", "x-api-key=s3cret"])
    run([], {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_CERTIFICATE": cert,
             "OTEL_EXPORTER_OTLP_HEADERS": "X-Api-Key=s3cret"})
    wrong = run(["--endpoint", endpoint, "--ca-file", cert, "--headers", "x-api-key=nope"])
    untrusted = run(["--endpoint", endpoint, "--ca-file", other_cert, "--headers", "x-api-key=s3cret"])
    run(["--endpoint", f"https://127.0.0.1:{tls_port}", "--protocol", "http/protobuf", "--ca-file", cert,
         "--headers", "x-api-key=s3cret"])
    http_untrusted = run(["--endpoint", f"https://127.0.0.1:{tls_port}", "--protocol", "http/protobuf",
                          "--ca-file", other_cert, "--headers", "x-api-key=s3cret"])
finally:
    workload.kill()
    workload.wait()
    socat.kill()
    socat.wait()
stats = collector.stop()

if stats["invalid"]:
    bpftest.fail(f"invalid requests: {stats['last_error']}")
if stats["accepted"] < 9 or stats["http_requests"] < 3 or stats["http_gzip"] != stats["http_requests"]:
    bpftest.fail(f"expected at least 3 requests from each good run (2 gRPC, 1 HTTPS): {stats}")
if stats["unauthenticated"] < 3:
    bpftest.fail(f"the run with the wrong header was not refused: {stats}")
if "refused" not in wrong or "status 16" not in wrong:
    bpftest.fail("the refusal (UNAUTHENTICATED) was not logged with the server's status")
if "retries; dropped" in wrong and ", 0 retries;" not in wrong:
    bpftest.fail("a permanent error was retried")
if "0 requests sent" not in untrusted or "0 requests sent" not in http_untrusted:
    bpftest.fail("a collector with an untrusted certificate received profiles")
if "certificate" not in http_untrusted:
    bpftest.fail("the HTTPS certificate failure was not logged")
samples = otlptest.samples_of(otlptest.dump(os.path.join(collector.out_dir, "*.pb")), workload.pid)
otlptest.check_split_shares(samples)
print("PASS")
