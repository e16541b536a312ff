/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `otelprofd diff BASE NEW [-o FILE] [--format=top|folded|html] [--top=N]`: what changed between two
 * profiles (our pprof .pb.gz or folded stacks), as a table of functions by the change of their share,
 * folded stacks with both counts ("stack base new", as FlameGraph's difffolded.pl writes), or a
 * differential flame graph page. Shares are of each profile's own total, so profiles of different
 * lengths compare. Bad, missing or mismatched inputs: one line on stderr and exit status 2.
 */
#ifndef OTELPROFD_DIFF_H
#define OTELPROFD_DIFF_H

#include <stdio.h>

/* argv[0] is "diff". Returns the exit status. */
int diff_main(int argc, char **argv);

#endif
