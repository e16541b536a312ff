#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Debian package: built from a copy of the source tree with dpkg-buildpackage -b and checked
with lintian (tests/ops/debpkg.py: the .deb of a given tree is cached and reused), installed with
dpkg -i (files, conffile), its binary run (--version, a 1-second profile where BPF can load),
removed (conffile kept) and purged (gone). Changes the system: runs only as root, and not where an
otelprofd package is installed already."""
import fcntl
import os
import subprocess
import tempfile

import bpftest
import debpkg
from debpkg import sh

source = os.environ["SOURCE_ROOT"]


def installed_status():
    p = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", "otelprofd"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return p.stdout.strip() if p.returncode == 0 else ""


if os.geteuid() != 0:
    bpftest.skip("installing a package needs root")
lock = open("/var/tmp/otelprofd-package-test.lock", "w")
fcntl.flock(lock, fcntl.LOCK_EX)  # one package test at a time (the gcc and ASan passes)
if installed_status().startswith(("ii", "rc", "iU", "iF")):
    bpftest.skip(f"an otelprofd package is installed already ({installed_status()}): not touching it")

deb = debpkg.build(source)
version = debpkg.version(source)

contents = sh(["dpkg-deb", "--contents", deb]).stdout
multiarch = sh(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).stdout.strip()
for path in ("./usr/sbin/otelprofd", f"./usr/lib/{multiarch}/otelprofd/libotelprofd-alloc.so",
             "./usr/share/man/man8/otelprofd.8.gz", "./lib/systemd/system/otelprofd.service",
             "./etc/otelprofd/otelprofd.conf", "./usr/share/doc/otelprofd/copyright"):
    if f" {path}\n" not in contents and not contents.rstrip().endswith(f" {path}"):
        bpftest.fail(f"the package has no {path}")

failures = []
try:
    sh(["dpkg", "-i", deb])
    if not installed_status().startswith("ii"):
        bpftest.fail(f"otelprofd is not installed after dpkg -i: {installed_status()}")
    conffiles = sh(["dpkg-query", "-W", "-f=${Conffiles}", "otelprofd"]).stdout
    if "/etc/otelprofd/otelprofd.conf" not in conffiles:
        failures.append("/etc/otelprofd/otelprofd.conf is not a conffile")
    out = sh(["/usr/sbin/otelprofd", "--version"]).stdout
    if version.split("-")[0] not in out:
        failures.append(f"--version says {out.strip()!r}, not {version}")
    sh(["/usr/sbin/otelprofd", "--check-config"])  # the installed default configuration
    sh(["systemd-analyze", "verify", "/lib/systemd/system/otelprofd.service"])
    try:
        bpftest.require_bpf()
        can_bpf = True
    except SystemExit:
        can_bpf = False
    if can_bpf:
        # A workload of ours to sample: an idle machine gives an empty profile (idle CPUs are not kept).
        folded = os.path.join(tempfile.mkdtemp(), "p.folded")
        work = subprocess.Popen([os.environ["SPLIT_WORKLOAD"], "5"], stdout=subprocess.DEVNULL)
        try:
            sh(["/usr/sbin/otelprofd", "--pid", str(work.pid), "-d", "1s", "-o", folded])
        finally:
            work.kill()
            work.wait()
        if not os.path.getsize(folded):
            failures.append("the installed binary's 1-second profile is empty")
    else:
        print("BPF cannot load here: the 1-second profile is left out")
    sh(["dpkg", "-r", "otelprofd"])
    if os.path.exists("/usr/sbin/otelprofd") or not os.path.exists("/etc/otelprofd/otelprofd.conf"):
        failures.append("dpkg -r left the binary or removed the conffile")
    sh(["dpkg", "-P", "otelprofd"])
    if os.path.exists("/etc/otelprofd") or installed_status():
        failures.append(f"dpkg -P left /etc/otelprofd or the package ({installed_status()})")
finally:
    if installed_status():
        subprocess.run(["dpkg", "-P", "otelprofd"])
if failures:
    bpftest.fail("; ".join(failures))
print("OK")
