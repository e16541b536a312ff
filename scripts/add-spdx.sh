#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Gives every source file of the repository an SPDX license line, idempotently: a file that already
# has one is left as it is. Apache-2.0 everywhere (LICENSE), but the BPF side (bpf/), which the
# kernel loads and which must be GPL-compatible: (GPL-2.0-only OR BSD-2-Clause).
# The line is the first of the file, or the second after a "#!" line.
# Usage: scripts/add-spdx.sh          add the missing lines (run from anywhere in the repository)
#        scripts/add-spdx.sh --check  change nothing; list the files without one, exit 1 if any
set -euo pipefail

check=no
case "${1:-}" in
  --check) check=no_write ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."

# The source files: tracked or new (not ignored), by name. Documentation, data and configuration
# files (*.md, *.json, *.conf, the man page) are not sources.
# Outside a git checkout (a source tarball), every such file but build directories.
patterns=('*.c' '*.h' '*.cpp' '*.proto' '*.go' '*.rs' '*.py' '*.sh' '*.yaml' '*.in'
  'meson.build' 'meson_options.txt' 'Containerfile' 'rules')
sources() {
  if git rev-parse --git-dir >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard -- "${patterns[@]}" "${patterns[@]/#/*/}"
  else
    local args=() p
    for p in "${patterns[@]}"; do args+=(-o -name "$p"); done
    find . \( -name .git -o -name 'build*' -o -name 'obj-*' -o -name '.pc' \) -prune \
      -o -type f \( "${args[@]:1}" \) -printf '%P\0'
  fi
}

license_of() {
  case "$1" in
    bpf/*.c | bpf/*.h) echo "(GPL-2.0-only OR BSD-2-Clause)" ;;
    *) echo "Apache-2.0" ;;
  esac
}

# The comment syntax of a file's language.
spdx_line() {
  local id="SPDX-License-Identifier: $(license_of "$1")"
  case "$1" in
    *.h | *.h.in) echo "/* $id */" ;;
    *.c | *.c.in | *.cpp | *.proto | *.go | *.rs) echo "// $id" ;;
    *) echo "# $id" ;;
  esac
}

has_spdx() {
  local l1=""
  { IFS= read -r l1 || true; if [[ $l1 == '#!'* ]]; then IFS= read -r l1 || true; fi; } <"$1"
  [[ $l1 == *SPDX-License-Identifier:* ]]
}

missing=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  has_spdx "$f" && continue
  missing=$((missing + 1))
  if [ "$check" = no_write ]; then
    echo "no SPDX line: $f"
    continue
  fi
  line=$(spdx_line "$f")
  tmp=$(mktemp "$f.spdx.XXXXXX")
  if IFS= read -r first <"$f" && [[ $first == '#!'* ]]; then
    { head -n 1 -- "$f"; echo "$line"; tail -n +2 -- "$f"; } >"$tmp"
  else
    { echo "$line"; cat -- "$f"; } >"$tmp"
  fi
  chmod --reference="$f" "$tmp"
  mv -- "$tmp" "$f"
done < <(sources)

if [ "$check" = no_write ] && [ "$missing" -gt 0 ]; then
  echo "$missing source file(s) without an SPDX line; add them with scripts/add-spdx.sh" >&2
  exit 1
fi
[ "$check" = no_write ] || echo "added $missing SPDX line(s)"
