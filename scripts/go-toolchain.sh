#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Print the path of a `go` command of the Go release VERSION (default 1.26.8), or nothing (exit 1)
# with the reason on stderr. Tried in order: /usr/local/go/bin/go when it is that release, a copy
# cached under /var/tmp/otelprofd-go, and the release's toolchain module from the Go module proxy
# (golang.org/toolchain, the module `go` itself downloads for GOTOOLCHAIN), unpacked into that cache.
# Usage: go-toolchain.sh [VERSION]
set -euo pipefail
version=${1:-1.26.8}
cache=${OTELPROFD_GO_CACHE:-/var/tmp/otelprofd-go}
want="go version go$version "

if [ -x /usr/local/go/bin/go ] && [[ "$(/usr/local/go/bin/go version 2>/dev/null)" == "$want"* ]]; then
  echo /usr/local/go/bin/go
  exit 0
fi
dir="$cache/go$version"
if [ -x "$dir/bin/go" ] && [[ "$("$dir/bin/go" version 2>/dev/null)" == "$want"* ]]; then
  echo "$dir/bin/go"
  exit 0
fi
proxy=${GOPROXY_URL:-https://proxy.golang.org}
zip="$proxy/golang.org/toolchain/@v/v0.0.1-go$version.linux-amd64.zip"
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if ! curl -fsSL --max-time 300 -o "$tmp/go.zip" "$zip"; then
  echo "go-toolchain: cannot download $zip" >&2
  exit 1
fi
python3 - "$tmp/go.zip" "$tmp/out" <<'PY'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        # golang.org/toolchain@v0.0.1-goX.linux-amd64/<path>: the release tree under one prefix
        _, _, version_and_path = info.filename.partition("@")
        name = version_and_path.partition("/")[2]
        if not name or name.startswith("/") or ".." in name.split("/"):
            continue
        path = os.path.join(sys.argv[2], name)
        if info.is_dir():
            os.makedirs(path, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with z.open(info) as src, open(path, "wb") as dst:
            dst.write(src.read())
        mode = (info.external_attr >> 16) & 0o777
        if not mode:  # older zips carry no modes: the commands are executable
            mode = 0o755 if name.startswith(("bin/", "pkg/tool/")) else 0o644
        os.chmod(path, mode)
PY
rm -rf "$dir"
mv "$tmp/out" "$dir"
if [[ "$("$dir/bin/go" version 2>/dev/null)" != "$want"* ]]; then
  echo "go-toolchain: $zip did not unpack to a working go$version" >&2
  exit 1
fi
echo "$dir/bin/go"
