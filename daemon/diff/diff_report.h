/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What `otelprofd diff` writes from a flame view holding the base profile in slot 0 and the new one
 * in slot 1 (output/flame_tree.h). The view is borrowed.
 */
#ifndef OTELPROFD_DIFF_REPORT_H
#define OTELPROFD_DIFF_REPORT_H

#include <stdio.h>

#include "output/flame_tree.h"

/* The rows functions whose share of self time moved most (base%, new%, signed delta), by |delta|. */
int diff_write_top(const struct flame *f, int view, unsigned rows, FILE *out);
/* "process;frame;...;leaf BASE NEW" lines, kernel frames suffixed "_[k]". */
int diff_write_folded(const struct flame *f, int view, FILE *out);

#endif
