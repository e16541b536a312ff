/* SPDX-License-Identifier: Apache-2.0 */
/* The last lines of libbpf's messages during a load, kept to show the verifier's last lines when the
 * load fails. libbpf hands the whole verifier log over in one multi-line message
 * ("-- BEGIN PROG LOAD LOG --\n...\n-- END PROG LOAD LOG --"), so every line of every message is kept,
 * in a ring bounded in lines and in bytes per line. */
#ifndef OTELPROFD_BPF_LOG_H
#define OTELPROFD_BPF_LOG_H

#include <stddef.h>
#include <stdint.h>

/* Longest line kept; longer lines are cut (the verifier's lines are far shorter). */
#define BPF_LOG_LINE_MAX 512

struct bpf_log;

/* A ring of the last max_lines lines; NULL when out of memory or max_lines is 0. */
struct bpf_log *bpf_log_new(unsigned max_lines);
void bpf_log_free(struct bpf_log *log);

/* Adds text: every complete line becomes one entry; a piece without a final newline waits for the
 * next call (libbpf may print one line in pieces). Empty lines are skipped. 0 or -ENOMEM. */
int bpf_log__append(struct bpf_log *log, const char *text);

/* Points lines[0..n) at the last n <= max kept lines, oldest first (a pending partial line counts as
 * the last); valid until the next append or clear. Returns n. */
unsigned bpf_log__tail(const struct bpf_log *log, const char **lines, unsigned max);

/* Lines dropped from the front of the ring since the last clear (to say the tail is not the whole). */
uint64_t bpf_log__dropped(const struct bpf_log *log);

void bpf_log__clear(struct bpf_log *log);

#endif
