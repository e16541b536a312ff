#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Output files of real runs, in every format (.folded, .pb.gz, .otlp):

- A symbolic link planted at the output path by another user, pointing to a root-owned file: the
  target keeps its contents and owner; the link is replaced by the profile, a regular file.
- A filesystem too small for the profile (a 64 KiB tmpfs, all but a page taken): exit 1, one line
  naming the path and "No space left on device", the earlier profile under the final name unchanged,
  no temporary file left, and the profile whole in a new file of $TMPDIR whose path is said.
"""
import os
import pwd
import re
import subprocess
import time

import bpftest
import pprofdecode

bpftest.require_bpf()
out = bpftest.tmpdir()
os.chmod(out, 0o1777)  # a shared directory such as /tmp, where another user can plant a link
FORMATS = ("folded", "pb.gz", "otlp")
# Python through many paths of the interpreter: a profile of tens of KiB in every format.
WORKLOAD = """
import json, random, re, time
end = time.time() + 10
while time.time() < end:
    d = [{"k": random.random(), "s": str(i)} for i in range(2000)]
    json.loads(json.dumps(d)); sorted(d, key=lambda x: x["k"]); re.findall(r"[0-9]+", str(d))
"""


def profile(path, check=True):
    """Profile the workload for 2 s at 499 Hz into path."""
    work = subprocess.Popen(["python3", "-c", WORKLOAD], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.2)
        return bpftest.run([bpftest.otelprofd(), "--pid", str(work.pid), "-F", "499", "-d", "2s", "-o", path],
                           check=check)
    finally:
        work.kill()
        work.wait()


def check_profile(path, fmt):
    """The file at path is a whole profile of the workload: its size."""
    if fmt == "folded":
        samples = sum(n for s, n in bpftest.read_folded(path).items() if s[0] == "python3")
    elif fmt == "pb.gz":
        samples = sum(v for labels, _, v in pprofdecode.samples(path) if labels.get("process_name") == "python3")
    else:
        data = open(path, "rb").read()
        dec = subprocess.run(["protoc", "--decode_raw"], input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if dec.returncode != 0:
            bpftest.fail(f"{path} is not a whole protobuf message: {dec.stderr.decode()}")
        samples = 1000 if b"python3" in data and b"_PyEval_EvalFrameDefault" in data else 0
    if samples < 100:  # a busy machine gives the workload less than its CPU
        bpftest.fail(f"{path}: {samples} samples of the workload in 2 s at 499 Hz")
    return os.path.getsize(path)


def leftovers(directory, name):
    return [e for e in os.listdir(directory) if e.startswith(name) and e != name]


try:
    nobody = pwd.getpwnam("nobody").pw_uid
except KeyError:
    nobody = None
sizes = {}
for fmt in FORMATS:
    victim = os.path.join(out, f"victim-{fmt}")
    with open(victim, "w") as f:
        f.write("root's file\n")
    os.chmod(victim, 0o644)
    path = os.path.join(out, f"link.{fmt}")
    os.symlink(victim, path)
    if nobody is not None:
        os.lchown(path, nobody, -1)
    profile(path)
    if open(victim).read() != "root's file\n":
        bpftest.fail(f"the target of the link at {path} was written through")
    if os.path.islink(path):
        bpftest.fail(f"{path} is still a link")
    sizes[fmt] = check_profile(path, fmt)
    if leftovers(out, f"link.{fmt}"):
        bpftest.fail(f"temporary files left: {leftovers(out, f'link.{fmt}')}")
    print(f"ok: .{fmt} through a planted link: link replaced by a {sizes[fmt]}-byte profile, target untouched")

fallback_dir = os.path.join(out, "fallback")
os.mkdir(fallback_dir)
os.environ["TMPDIR"] = fallback_dir  # where a profile that could not be written goes
small = os.path.join(out, "small")
os.mkdir(small)
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", small], check=True)
try:
    for fmt in FORMATS:
        path = os.path.join(small, f"full.{fmt}")
        with open(path, "w") as f:
            f.write("the earlier profile\n")
        filler = os.path.join(small, "filler")
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError:
            pass
        os.close(fd)
        os.truncate(filler, os.path.getsize(filler) - 4096)  # a page free
        if sizes[fmt] <= 4096:
            bpftest.fail(f"the .{fmt} profile ({sizes[fmt]} bytes) would fit in 4 KiB: the test proves nothing")
        p = profile(path, check=False)
        os.unlink(filler)
        if p.returncode != 1:
            bpftest.fail(f".{fmt} on a full filesystem: exit {p.returncode}, expected 1")
        if f"Failed to write {path}: No space left on device" not in p.stderr:
            bpftest.fail(f".{fmt} on a full filesystem: no line naming {path} and the cause")
        if open(path).read() != "the earlier profile\n":
            bpftest.fail(f".{fmt} on a full filesystem: the file under the final name changed")
        if leftovers(small, f"full.{fmt}"):
            bpftest.fail(f".{fmt} on a full filesystem: temporary files left: {leftovers(small, f'full.{fmt}')}")
        os.unlink(path)
        m = re.search(r"The profile \(\d+ samples?\) is in (\S+) instead", p.stderr)
        if not m or not os.path.basename(m.group(1)).endswith(f"-full.{fmt}") or \
                os.path.dirname(m.group(1)) != os.environ["TMPDIR"]:
            bpftest.fail(f".{fmt} on a full filesystem: no fallback file in $TMPDIR said")
        check_profile(m.group(1), fmt)
        os.unlink(m.group(1))
        print(f"ok: .{fmt} on a full filesystem: exit 1, the cause said, the earlier file kept, nothing left, "
              f"the profile in {m.group(1)}")
finally:
    subprocess.run(["umount", small], check=True)
print("PASS")
