#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""docs/self-monitoring.md lists every metric otelprofd publishes (its own and the standard process_*), and no other: the names in the
code (daemon/ops/self_metrics.c, daemon/ops/metrics_server.c) against the page's, both ways."""
import os
import re

from lists_agree import lists_agree

root = os.environ["SOURCE_ROOT"]
ops = os.path.join(root, "daemon", "ops")
src = open(os.path.join(ops, "self_metrics.c")).read()
code = {"otelprofd_" + n for n in re.findall(r'\b[CG]\("([a-z0-9_]+)"', src)}
code |= {"process_" + n for n in re.findall(r'\bP[CG]\("([a-z0-9_]+)"', src)}
for f in ("self_metrics.c", "metrics_server.c"):
    code |= set(re.findall(r'"(?:# HELP |# TYPE )?(otelprofd_[a-z0-9_]+)', open(os.path.join(ops, f)).read()))
page = open(os.path.join(root, "docs", "self-monitoring.md")).read()
documented = set(re.findall(r"`((?:otelprofd|process)_[a-z0-9_]+)[`{]", page))
print(f"{len(code)} metrics in the code, {len(documented)} in docs/self-monitoring.md")
lists_agree("the code", code, "docs/self-monitoring.md", documented, 50,
            f"only {len(code)} metrics read from the code: did self_metrics.c change its form?")
