#!/usr/bin/env python3
"""A large synthetic profile as folded stacks: gen_stacks.py N OUT.folded

N distinct stacks from 24 processes walking a random call graph (8 callees per function out of a
pool of 30,000 C++-like names, depth 8 to 48): shared prefixes and long names, as a server's profile
has them. Seeded: the same N gives the same file."""
import random
import sys

n, out = int(sys.argv[1]), sys.argv[2]
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
        fn = pool[rng.choice(callees[fn][:rng.choice([2, 4, 8])])]
        stack.append(fn)
    key = ";".join(stack)
    seen[key] = seen.get(key, 0) + int(rng.paretovariate(1.2))
with open(out, "w") as f:
    for k, v in seen.items():
        f.write(f"{k} {v}\n")
