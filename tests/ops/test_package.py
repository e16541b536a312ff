#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Debian package: built from a copy of the source tree with dpkg-buildpackage -b (tests off,
parallel), checked with lintian (no errors), installed with dpkg -i (files, conffile), its binary
run (--version, a 1-second profile where BPF can load), removed (conffile kept) and purged (gone).
The .deb of a given tree is kept in /var/tmp/otelprofd-deb-cache/ and reused: only the first run
of a tree pays for the build (1-3 minutes on two cores). Changes the system: runs only as root, and
not where an otelprofd package is installed already."""
import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

import bpftest

CACHE = "/var/tmp/otelprofd-deb-cache"
source = os.environ["SOURCE_ROOT"]


def sh(args, check=True, **kw):
    print("$", " ".join(args), flush=True)
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if p.stdout:
        print(p.stdout[-3000:], end="" if p.stdout.endswith("\n") else "\n")
    if check and p.returncode != 0:
        bpftest.fail(f"{args[0]} exited {p.returncode}")
    return p


def installed_status():
    p = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", "otelprofd"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return p.stdout.strip() if p.returncode == 0 else ""


if os.geteuid() != 0:
    bpftest.skip("installing a package needs root")
for tool in ("dpkg-buildpackage", "dh", "lintian"):
    if not shutil.which(tool):
        bpftest.fail(f"{tool} is missing: run scripts/install-deps.sh")
lock = open("/var/tmp/otelprofd-package-test.lock", "w")
fcntl.flock(lock, fcntl.LOCK_EX)  # one package test at a time (the gcc and ASan passes)
if installed_status().startswith(("ii", "rc", "iU", "iF")):
    bpftest.skip(f"an otelprofd package is installed already ({installed_status()}): not touching it")

# The tree: tracked and new files (not ignored), as git lists them; its hash names the cached build.
files = subprocess.run(["git", "-C", source, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       stdout=subprocess.PIPE, check=True).stdout.decode().split("\0")
files = sorted(f for f in files if f and os.path.isfile(os.path.join(source, f)))
digest = hashlib.sha256()
for f in files:
    path = os.path.join(source, f)
    digest.update(f.encode() + b"\0" + oct(os.stat(path).st_mode & 0o111).encode() + b"\0")
    with open(path, "rb") as fh:
        digest.update(hashlib.sha256(fh.read()).digest())
cached = os.path.join(CACHE, digest.hexdigest()[:16])
version = subprocess.run(["dpkg-parsechangelog", "-l", os.path.join(source, "debian", "changelog"), "-S", "Version"],
                         stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
deb_name = f"otelprofd_{version}_{subprocess.run(['dpkg', '--print-architecture'], stdout=subprocess.PIPE, text=True).stdout.strip()}.deb"

if not os.path.exists(os.path.join(cached, deb_name)):
    work = tempfile.mkdtemp(prefix="otelprofd-deb-")
    tree = os.path.join(work, f"otelprofd-{version}")
    for f in files:
        os.makedirs(os.path.join(tree, os.path.dirname(f)), exist_ok=True)
        shutil.copy2(os.path.join(source, f), os.path.join(tree, f))
    env = dict(os.environ, DEB_BUILD_OPTIONS=f"nocheck parallel={os.cpu_count()}")
    start = time.time()
    sh(["dpkg-buildpackage", "-b", "-us", "-uc"], cwd=tree, env=env)
    print(f"package built in {time.time() - start:.0f} s", flush=True)
    if not os.path.exists(os.path.join(work, deb_name)):
        bpftest.fail(f"dpkg-buildpackage made no {deb_name}: {os.listdir(work)}")
    changes = glob.glob(os.path.join(work, "*.changes"))
    lint = sh(["lintian", "--fail-on", "error", "--tag-display-limit", "0", *changes], check=False)
    if lint.returncode != 0:
        bpftest.fail("lintian found errors")
    for old in glob.glob(os.path.join(CACHE, "*")):
        shutil.rmtree(old, ignore_errors=True)  # one tree's build kept: the cache stays small
    staging = cached + ".new"
    os.makedirs(staging)
    shutil.copy2(os.path.join(work, deb_name), staging)
    with open(os.path.join(staging, "lintian.txt"), "w") as fh:
        fh.write(lint.stdout)
    os.rename(staging, cached)
    shutil.rmtree(work)
else:
    print(f"reusing {cached}/{deb_name}; lintian said:\n" + open(os.path.join(cached, "lintian.txt")).read())
deb = os.path.join(cached, deb_name)

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
