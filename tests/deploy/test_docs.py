#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Every option of the daemon (the long_options table of daemon/config/options.c) is in --help, in the man
page and in the shipped configuration file, and that file passes --check-config: a flag added or
renamed in the code without its documentation breaks this test."""
import os
import re
import subprocess
import sys

root = os.environ["SOURCE_ROOT"]
exe = os.environ["OTELPROFD"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


source = open(os.path.join(root, "daemon", "config", "options.c")).read()
table = source[source.index("long_options[] = {"):]
table = table[:table.index("};")]
names = re.findall(r'\{ "([a-z-]+)",', table)
if len(names) < 20:
    fail(f"found only {len(names)} options in daemon/config/options.c: {names}")
help_text = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
man = open(os.path.join(root, "docs", "otelprofd.8")).read().replace("\\-", "-")
conf = open(os.path.join(root, "systemd", "otelprofd.conf")).read()
command_line_only = {"config", "check-config", "help", "version"}
missing = []
for n in names:
    if f"--{n}" not in help_text:
        missing.append(f"--{n} not in --help")
    if f"--{n}" not in man:
        missing.append(f"--{n} not in the man page")
    if n not in command_line_only and not re.search(rf"^#? ?{re.escape(n)} = ", conf, re.M):
        missing.append(f"{n} not in systemd/otelprofd.conf")
if missing:
    fail("; ".join(missing))
print(f"{len(names)} options documented in --help, the man page and the configuration file")

clean_env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
chk = subprocess.run([exe, "--check-config", "--config", os.path.join(root, "systemd", "otelprofd.conf")],
                     capture_output=True, text=True, env=clean_env)
print(chk.stdout + chk.stderr)
if chk.returncode != 0:
    fail("the shipped configuration does not pass --check-config")
# Uncommented, every documented example must still be accepted (keys and value syntax).
examples = "\n".join(re.sub(r"^# ([a-z-]+ = )", r"\1", l) for l in conf.splitlines()
                     if not re.match(r"^# (pid|container|cgroup|output|format|ca-file|client-cert|client-key|verbose|quiet) = ", l))
path = "/tmp/otelprofd-docs-examples.conf"
open(path, "w").write(examples)
chk = subprocess.run([exe, "--check-config", "--config", path], capture_output=True, text=True, env=clean_env)
print(chk.stdout + chk.stderr)
if chk.returncode != 0:
    fail("an example value in systemd/otelprofd.conf is rejected")
os.unlink(path)
print("PASS")
