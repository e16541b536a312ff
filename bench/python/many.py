# SPDX-License-Identifier: Apache-2.0
"""One of many Python processes for bench/python/bpf_cost.py --many: 40 distinct functions, each
called in turn, a little CPU then a short sleep (so that 50 of them share 2 CPUs). Usage: many.py SECONDS"""
import sys
import time

FUNCS = []
for i in range(40):
    exec(f"def work_{i}(n):\n    t = 0\n    for j in range(n):\n        t += j * {i}\n    return t\n")
    FUNCS.append(globals()[f"work_{i}"])

deadline = time.monotonic() + float(sys.argv[1])
while time.monotonic() < deadline:
    for f in FUNCS:
        f(300)
    time.sleep(0.01)
