#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A large synthetic profile as folded stacks: gen_stacks.py N OUT.folded [SHARED]

N distinct stacks from 24 processes walking a random call graph (8 callees per function out of a
pool of 30,000 C++-like names, depth 8 to 48), with long names. SHARED (0 to 1, default 0) is the
chance a call goes to the function's usual callee rather than any of its 8: 0 makes stacks that
share little beyond their first frames (24 tree nodes per stack: the worst case), 0.97 about 6.5
nodes per stack, what a real system-wide otelprofd profile has (3174 stacks, 20536
nodes at 999 Hz for 5 s). Seeded: the same arguments give the same file."""
import random
import sys

n, out = int(sys.argv[1]), sys.argv[2]
shared = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
rng = random.Random(19)
words = ["Request", "Handler", "Cache", "Index", "Parser", "Buffer", "Session", "Codec", "Queue", "Store",
         "Table", "Stream", "Router", "Encoder", "Pool", "Tree", "Hash", "Batch", "Worker", "Frame"]
pool = [f"ns{i % 37}::{rng.choice(words)}{rng.choice(words)}::{rng.choice(['run', 'get', 'put', 'step', 'scan', 'flush'])}"
        f"_{i}(std::vector<int, std::allocator<int> > const&)" for i in range(30000)]
callees = {}
seen = {}
procs = [f"service-{i}" for i in range(24)]
while len(seen) < n:
    stack = [rng.choice(procs), "main"]
    fn = "main"
    for _ in range(rng.randint(8, 48)):
        if fn not in callees:
            callees[fn] = rng.sample(range(len(pool)), 8)
        usual = rng.random() < shared
        fn = pool[callees[fn][0] if usual else rng.choice(callees[fn][:rng.choice([2, 4, 8])])]
        stack.append(fn)
    key = ";".join(stack)
    seen[key] = seen.get(key, 0) + int(rng.paretovariate(1.2))
with open(out, "w") as f:
    for k, v in seen.items():
        f.write(f"{k} {v}\n")
