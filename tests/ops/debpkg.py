# SPDX-License-Identifier: Apache-2.0
"""The Debian package of a source tree, built once: dpkg-buildpackage -b from a copy of the tree
(tracked and new files, as git lists them; tests off, parallel), checked with lintian (no errors),
kept in /var/tmp/otelprofd-deb-cache/ under the tree's hash and reused. Only the first test of a
tree pays for the build (1-3 minutes on two cores). Used by the package and systemd suites."""
import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
import time

import bpftest

CACHE = "/var/tmp/otelprofd-deb-cache"


def sh(args, check=True, **kw):
    print("$", " ".join(args), flush=True)
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if p.stdout:
        print(p.stdout[-3000:], end="" if p.stdout.endswith("\n") else "\n")
    if check and p.returncode != 0:
        bpftest.fail(f"{args[0]} exited {p.returncode}")
    return p


def version(source):
    return subprocess.run(["dpkg-parsechangelog", "-l", os.path.join(source, "debian", "changelog"), "-S", "Version"],
                          stdout=subprocess.PIPE, text=True, check=True).stdout.strip()


def build(source):
    """The path of the tree's .deb, built (or taken from the cache) under a lock shared by every test."""
    for tool in ("dpkg-buildpackage", "dh", "lintian"):
        if not shutil.which(tool):
            bpftest.fail(f"{tool} is missing: run scripts/install-deps.sh")
    os.makedirs(CACHE, exist_ok=True)
    lock = open(CACHE + ".lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; the others wait and reuse it
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
    ver = version(source)
    arch = subprocess.run(["dpkg", "--print-architecture"], stdout=subprocess.PIPE, text=True).stdout.strip()
    deb_name = f"otelprofd_{ver}_{arch}.deb"
    if os.path.exists(os.path.join(cached, deb_name)):
        print(f"reusing {cached}/{deb_name}; lintian said:\n" + open(os.path.join(cached, "lintian.txt")).read())
        return os.path.join(cached, deb_name)
    work = tempfile.mkdtemp(prefix="otelprofd-deb-")
    tree = os.path.join(work, f"otelprofd-{ver}")
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
    return os.path.join(cached, deb_name)
