#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The man page (docs/otelprofd.8) is the complete flag reference and agrees with --help: the flags
each defines, long and short, are the same lists, both ways."""
import os
import re
import subprocess

from lists_agree import lists_agree

root = os.environ["SOURCE_ROOT"]
help_text = subprocess.run([os.environ["OTELPROFD"], "--help"], capture_output=True, text=True).stdout
man = open(os.path.join(root, "docs", "otelprofd.8")).read().replace("\\-", "-")
FLAG = r"(?<![\w-])(--?[A-Za-z][a-z0-9-]*)"

# --help: option lines begin with spaces and a dash; the flags are what comes before the description
# (two spaces or more after the last flag).
in_help = set()
for line in help_text.splitlines():
    if re.match(r"^ {2,8}-", line):
        in_help.update(re.findall(FLAG, re.split(r"(?<=\S) {2,}", line.strip())[0]))
# The man page: each flag is defined on the line after a .TP.
in_man = set()
lines = man.splitlines()
for i, line in enumerate(lines[:-1]):
    if line.startswith(".TP") and re.match(r"^\.BR? +-", lines[i + 1]):
        in_man.update(re.findall(FLAG, re.sub(r"\\f[A-Z]|=[^ ,\"]*", " ", lines[i + 1])))
print(f"--help defines {len(in_help)} flags, the man page {len(in_man)}")
lists_agree("--help", in_help, "the man page", in_man, 40,
            f"only {len(in_help)} flags read from --help: {sorted(in_help)}")
