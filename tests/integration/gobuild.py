# SPDX-License-Identifier: Apache-2.0
"""Go test programs built by the Go releases the tests cover: Debian's Go 1.19 and Go 1.26 (found at
/usr/local/go, or fetched by scripts/go-toolchain.sh), each build cached by compiler and sources."""
import hashlib
import os
import subprocess


def compilers(toolchain_script):
    """{release: go binary} of the compilers this machine has; a missing one is said and left out."""
    found = {}
    if os.access("/usr/lib/go/bin/go", os.X_OK):
        found["1.19"] = "/usr/lib/go/bin/go"
    else:
        print("SKIP variant Go 1.19: /usr/lib/go/bin/go is missing (Debian's golang-go)")
    p = subprocess.run([toolchain_script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if p.returncode == 0 and p.stdout.strip():
        found["1.26"] = p.stdout.strip()
    else:
        print(f"SKIP variant Go 1.26: no go1.26 at /usr/local/go nor from the module proxy ({p.stderr.strip()})")
    return found


def cache_dir(cache, go, source):
    """The folder of this compiler's builds of source's files, under cache."""
    h = hashlib.sha256(subprocess.run([go, "version"], capture_output=True, text=True, check=True).stdout.encode())
    for name in sorted(os.listdir(source)):
        with open(os.path.join(source, name), "rb") as f:
            h.update(name.encode() + f.read())
    return os.path.join(cache, h.hexdigest()[:16])


def build(go, version, source, cache, path, ldflags=(), cgo=True):
    """Build source (a GOPATH-less package, no modules fetched) into path, atomically."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    env = dict(os.environ, GOCACHE=os.path.join(cache, "gocache-" + version), GOPATH=os.path.join(cache, "gopath"),
               GOTOOLCHAIN="local", GOPROXY="off", GO111MODULE="off", GOFLAGS="", CGO_ENABLED="1" if cgo else "0")
    subprocess.run([go, "build", *ldflags, "-o", path + ".tmp", "."], cwd=source, env=env, check=True, timeout=600)
    os.replace(path + ".tmp", path)
