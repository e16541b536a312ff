#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""otelprofd --pid over the 60/30/10 workload: shares within 5 points, the full call chain
main -> caller -> hot function on every hot sample, and not one sample of another process (checked
in the pprof output, decoded with protoc).

Every sample is unwound with DWARF CFI from the copied stack (the default --stack-copy), which is
exact on a function's first and last instructions too, so no hot sample may lack its caller. (The
frame-pointer walk alone could not see the caller there; the pprof run below uses it, with
--stack-copy 0, and checks only the pids.)"""
import os
import re
import subprocess
import sys

import bpftest

bpftest.require_bpf()
workload = os.environ["SPLIT_WORKLOAD"]
proto = os.environ["PPROF_PROTO"]
out = bpftest.tmpdir()

proc = subprocess.Popen([workload, "30"])
try:
    folded = os.path.join(out, "split.folded")
    pprof = os.path.join(out, "split.pb.gz")
    cpu = bpftest.process_cpu_seconds(proc.pid)
    bpftest.run([bpftest.otelprofd(), "--pid", str(proc.pid), "--frequency", "499", "--duration", "4s",
                 "-o", folded])
    cpu = bpftest.process_cpu_seconds(proc.pid) - cpu
    bpftest.run([bpftest.otelprofd(), "--pid", str(proc.pid), "--frequency", "499", "--duration", "2s",
                 "--stack-copy", "0", "-o", pprof])
finally:
    proc.kill()
    proc.wait()

stacks = bpftest.read_folded(folded)
total = sum(stacks.values())
# 500 at least, or on a host so loaded that the workload had less than 2 s of CPU in the run, half
# of what 499 Hz takes of that CPU.
print(f"{total} samples; the workload had {cpu:.2f} s of CPU during the run")
if total < bpftest.least_samples(500, 499, cpu):
    bpftest.fail(f"only {total} samples in 4 s at 499 Hz, for {cpu:.2f} s of the workload's CPU")
bpftest.check_split(stacks)

# The pprof output decodes with protoc and every sample's pid label is the workload's.
import gzip
raw = gzip.open(pprof).read()
dec = subprocess.run(["protoc", "--decode", "perftools.profiles.Profile", "--proto_path",
                      os.path.dirname(proto), os.path.basename(proto)],
                     input=raw, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
if dec.returncode != 0:
    bpftest.fail("protoc could not decode the pprof output: " + dec.stderr.decode())
text = dec.stdout.decode()
strings = re.findall(r'^string_table: "(.*)"$', text, re.M)
pid_key = strings.index("pid")
pids = set(int(m) for m in re.findall(r"label \{\s*key: %d\s*num: (\d+)" % pid_key, text))
if pids != {proc.pid}:
    bpftest.fail(f"pprof samples carry pids {pids}, expected only {proc.pid}")
samples = text.count("\nsample {")
if samples == 0:
    bpftest.fail("pprof output has no sample")
print(f"pprof: {samples} samples, all of pid {proc.pid}")
print("PASS")
