/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sample records made up for the tests of what follows the ring buffer (aggregate, profile, the
 * writers, OTLP encoding, export, the record path): a record's header and identity, and a stack of
 * three functions of the test program itself, optionally under a kernel frame that a made-up
 * kallsyms names.
 */
#ifndef OTELPROFD_TESTS_SAMPLE_RECORD_H
#define OTELPROFD_TESTS_SAMPLE_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "records.h"

/* A sample of pid's thread tid on cpu, the thread named comm and its process process_comm; no frames. */
static inline struct otelprof_sample sample_record(uint32_t pid, uint32_t tid, uint32_t cpu, const char *comm,
						   const char *process_comm)
{
	struct otelprof_sample s;

	memset(&s, 0, sizeof(s));
	s.hdr.kind = OTELPROF_RECORD_SAMPLE;
	s.hdr.size = sizeof(s);
	s.pid = pid;
	s.tid = tid;
	s.cpu = cpu;
	snprintf(s.comm, sizeof(s.comm), "%s", comm);
	snprintf(s.process_comm, sizeof(s.process_comm), "%s", process_comm);
	return s;
}

/* A kallsyms file's text that names the kernel frame of sample_set_stack() do_kernel_work. */
#define SAMPLE_KALLSYMS "ffffffff81000000 T _stext\nffffffff81000100 T do_kernel_work\n"

/* The user stack leaf <- mid <- root: the leaf exact, the callers as return addresses a few bytes
 * into the function. Under a kernel frame (with_kernel) the user leaf is a return address too. */
static inline void sample_set_stack(struct otelprof_sample *s, void (*leaf)(void), void (*mid)(void),
				    void (*root)(void), bool with_kernel)
{
	s->user_depth = 3;
	s->user_ips[0] = (uint64_t)(uintptr_t)leaf;
	s->user_ips[1] = (uint64_t)(uintptr_t)mid + 4;
	s->user_ips[2] = (uint64_t)(uintptr_t)root + 4;
	if (with_kernel) {
		s->kernel_depth = 1;
		s->kernel_ips[0] = 0xffffffff81000110ULL;
		s->user_ips[0] += 1;
	}
}

#endif
