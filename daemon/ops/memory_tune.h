/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The C library's allocator set for a long-running daemon whose memory comes in bursts (an export
 * interval's profile and requests are built, sent and freed): freed memory goes back to the kernel
 * instead of staying in the process's resident set (docs/memory.md).
 */
#ifndef OTELPROFD_MEMORY_TUNE_H
#define OTELPROFD_MEMORY_TUNE_H

/* At start, before the first allocation of size: few arenas for the daemon's threads, and large
 * blocks mapped on their own at a fixed threshold (glibc raises it as large blocks are freed, which
 * would keep the next interval's arrays in the heap). */
void memory_tune_start(void);
/* After an interval's profile is built, sent and freed: the heap's free pages back to the kernel. */
void memory_tune_release(void);

#endif
