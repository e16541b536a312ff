#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Profile the whole host while a user workload runs and the kernel is kept busy: the profile
has both kernel frames and symbolized user frames, and the top table is printed."""
import os
import subprocess

import bpftest

bpftest.require_bpf()
workload = os.environ["SPLIT_WORKLOAD"]
out = bpftest.tmpdir()
folded = os.path.join(out, "host.folded")

user = subprocess.Popen([workload, "20"])
# Kernel work: reading /dev/zero into /dev/null spends its time in system calls.
kernel = subprocess.Popen(["dd", "if=/dev/zero", "of=/dev/null", "bs=64k", "count=100000000"],
                          stderr=subprocess.DEVNULL)
try:
    bpftest.run([bpftest.otelprofd(), "--frequency", "199", "--duration", "3s", "-o", folded])
    top = bpftest.run([bpftest.otelprofd(), "--frequency", "99", "--duration", "1s"])
finally:
    user.kill()
    kernel.kill()
    user.wait()
    kernel.wait()

stacks = bpftest.read_folded(folded)
kernel_frames = sum(n for s, n in stacks.items() if any(f.endswith("_[k]") for f in s[1:]))
user_frames = sum(n for s, n in stacks.items() if s[0] == "split" and s[-1].startswith("hot_"))
comms = set(s[0] for s in stacks)
print(f"{sum(stacks.values())} samples from {len(comms)} process names; "
      f"{kernel_frames} with kernel frames, {user_frames} in the workload's hot functions")
if not kernel_frames:
    bpftest.fail("no kernel frame in a whole-host profile")
if not user_frames:
    bpftest.fail("no symbolized user frame of the workload in a whole-host profile")
if "dd" not in comms:
    bpftest.fail("the dd process is missing from a whole-host profile")
if "SELF%" not in top.stdout:
    bpftest.fail("the top table was not printed")
print("PASS")
