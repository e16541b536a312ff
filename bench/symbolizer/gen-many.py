#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a program shaped like a real one into DIR: U compile units of F functions each (every
function has two always-inlined helpers and calls into the next unit), a shared header with types,
the usual libc headers in every unit, and a Makefile (-O2 -g; build with make -j2). main prints the
addresses of 20 functions spread over the units (a "stack") and waits.
Usage: gen-many.py DIR UNITS FUNCTIONS_PER_UNIT"""
import os
import sys

out, units, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "common.h"), "w") as f:
    f.write("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <stdint.h>\n"
            "struct node { struct node *next, *prev; uint64_t key; char name[32]; double weight; };\n"
            "struct table { struct node **slots; size_t n, cap; int (*cmp)(const void *, const void *); };\n"
            "extern volatile long sink;\n")
    for u in range(units):
        f.write("long u%d_entry(long x);\n" % u)


def unit(u):
    src = ['#include "common.h"\n']
    for i in range(per):
        name = "u%d_f%d" % (u, i)
        callee = "u%d_entry(x - 1)" % ((u + 1) % units) if i == per - 1 else "u%d_f%d(x ^ %d)" % (u, i + 1, i)
        src.append(f"""
struct s_{name} {{ long a, b; int c[4]; struct node n; }};
static inline __attribute__((always_inline)) long {name}_ha(struct s_{name} *p, long x) {{ p->a += x * {i + 3}; return p->a ^ (x >> 3); }}
static inline __attribute__((always_inline)) long {name}_hb(struct s_{name} *p, long x) {{ sink += {name}_ha(p, x ^ {i}); return {name}_ha(p, x + {u}) * 7; }}
__attribute__((noinline)) long {name}(long x) {{
	struct s_{name} v = {{ x, x + 1, {{ 1, 2, 3, 4 }}, {{ 0 }} }};
	long r = {name}_hb(&v, x);
	if (x > 0 && (x & 15) == 3)
		r += {callee};
	r += {name}_hb(&v, r);
	return r + v.b + v.c[x & 3];
}}
""")
    src.append("long u%d_entry(long x) { return u%d_f0(x); }\n" % (u, u))
    # forward declarations so functions may call later ones
    decl = "".join("long u%d_f%d(long x);\n" % (u, i) for i in range(per))
    return src[0] + decl + "".join(src[1:])


for u in range(units):
    path = os.path.join(out, "u%d.c" % u)
    text = unit(u)
    if not os.path.exists(path) or open(path).read() != text:
        open(path, "w").write(text)
with open(os.path.join(out, "main.c"), "w") as f:
    f.write('#include "common.h"\n#include <unistd.h>\nvolatile long sink;\n')
    step = max(1, units // 20)
    picks = [(u, (u * 7) % per) for u in range(0, units, step)][:20]
    for u, i in picks:
        f.write("long u%d_f%d(long x);\n" % (u, i))
    f.write("int main(int argc, char **argv) {\n  if (argc > 1) sink = u0_entry(argc);\n")
    for u, i in picks:
        f.write('  printf("%%p\\n", (void *)u%d_f%d);\n' % (u, i))
    f.write('  printf("ready\\n"); fflush(stdout); pause(); return 0;\n}\n')
objs = " ".join("u%d.o" % u for u in range(units))
with open(os.path.join(out, "Makefile"), "w") as f:
    f.write("CFLAGS = -O2 -g\nOBJS = main.o %s\nmany: $(OBJS)\n\t$(CC) $(CFLAGS) -o $@ $(OBJS)\n"
            "%%.o: %%.c common.h\n\t$(CC) $(CFLAGS) -c $< -o $@\n" % objs)
