#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Builds the 'heavy' workload of issue 27: a busy program whose debug info is large and compressed,
as a distribution's separate debug files are (libc6-dbg): NFUNCS functions that the main loop calls
in turn (samples spread over all of them) and NMACROS macro definitions kept by -g3 (.debug_macro
and .debug_str), then `objcopy --compress-debug-sections=zlib`. Names and values are pseudo-random
(fixed seed) so the sections compress about 2:1, as real ones do. With the defaults: ~4 MiB on disk,
~8.6 MiB of DWARF once inflated.

  gen-heavy.py GCC OBJCOPY OUTPUT [NFUNCS NMACROS]

The program runs for argv[1] seconds (default 30), on one CPU."""
import os
import random
import subprocess
import sys

gcc, objcopy, out = sys.argv[1:4]
nfuncs = int(sys.argv[4]) if len(sys.argv) > 4 else 3000
nmacros = int(sys.argv[5]) if len(sys.argv) > 5 else 120000
rnd = random.Random(27)
src = out + ".c"
with open(src, "w") as f:
    f.write("#include <stdlib.h>\n#include <time.h>\nvolatile unsigned long sink;\n")
    for i in range(nmacros):
        f.write(f"#define HEAVY_MACRO_{i}_{rnd.getrandbits(40):x} ({rnd.getrandbits(30)} + {i})\n")
    for i in range(nfuncs):
        f.write(f"struct hv{i} {{ long a{i}; int b{i}[3]; double c{i}; }};\n"
                f"__attribute__((noinline)) unsigned long heavy_f{i}(unsigned long x)\n"
                f"{{\n\tstruct hv{i} v = {{ (long)x, {{ 1, 2, 3 }}, 0.5 }};\n\n"
                f"\tfor (int k = 0; k < 64; k++) {{\n\t\tv.a{i} = v.a{i} * {rnd.getrandbits(16) | 1} + k;\n"
                f"\t\tsink += v.b{i}[k % 3];\n\t}}\n\treturn (unsigned long)v.a{i} ^ x;\n}}\n")
    f.write("typedef unsigned long (*heavy_fn)(unsigned long);\nstatic const heavy_fn table[] = {\n")
    for i in range(nfuncs):
        f.write(f"\theavy_f{i},\n")
    f.write("};\n\nint main(int argc, char **argv)\n{\n"
            "\ttime_t end = time(NULL) + (argc > 1 ? atol(argv[1]) : 30);\n\tunsigned long x = 1;\n\n"
            "\twhile (time(NULL) < end)\n"
            "\t\tfor (unsigned i = 0; i < sizeof(table) / sizeof(table[0]); i++)\n\t\t\tx = table[i](x);\n"
            "\tsink = x;\n\treturn 0;\n}\n")
plain = out + ".plain"
subprocess.run([gcc, "-O1", "-g3", "-fno-omit-frame-pointer", "-Wl,--build-id", src, "-o", plain], check=True)
subprocess.run([objcopy, "--compress-debug-sections=zlib", plain, out], check=True)
os.unlink(plain)
os.unlink(src)
