/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The self-contained HTML page of a flame graph: the page's CSS and JavaScript (daemon/output/html/,
 * embedded at build time by scripts/embed-text.py) around a flame's JSON (output/flame_tree.h).
 * Nothing is loaded from the network: the file opens offline, from a mail or a ticket.
 */
#ifndef OTELPROFD_HTML_PAGE_H
#define OTELPROFD_HTML_PAGE_H

#include <stdio.h>

#include "output/flame_tree.h"

/* The whole page to out. 0 or a negative errno (a failed write). */
int html_page_write(const struct flame *f, FILE *out);

#endif
