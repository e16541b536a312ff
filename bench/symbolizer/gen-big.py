#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a C file whose -O2 -g build is a large binary with DWARF: N functions, each with two
inlined helpers. main prints the addresses of 20 of them (a "stack") and waits."""
import sys

n = int(sys.argv[1])
out = sys.stdout
out.write("#include <stdio.h>\n#include <unistd.h>\nvolatile long sink;\n")
for i in range(n):
    out.write(f"""
struct s{i} {{ long a{i}, b{i}; int c{i}[4]; }};
static inline __attribute__((always_inline)) long h{i}a(struct s{i} *p, long x) {{ p->a{i} += x * {i + 3}; return p->a{i} ^ (x >> 3); }}
static inline __attribute__((always_inline)) long h{i}b(struct s{i} *p, long x) {{ sink += h{i}a(p, x ^ {i}); return h{i}a(p, x + {i}) * 7; }}
__attribute__((noinline)) long f{i}(long x) {{ struct s{i} v = {{ x, x + 1, {{ 1, 2, 3, 4 }} }}; long r = h{i}b(&v, x); r += h{i}b(&v, r); return r + v.b{i} + v.c{i}[x & 3]; }}
""")
out.write("int main(void) {\n")
step = max(1, n // 20)
for i in range(0, n, step):
    out.write(f'  printf("%p\\n", (void *)f{i});\n')
out.write('  printf("ready\\n"); fflush(stdout); pause(); return 0;\n}\n')
