/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * --max-cpu in the kernel (daemon/ops/cpu_ceiling.h): over its CPU ceiling the daemon keeps only
 * one sample in cpu_shed_keep_every, so the samples it sheds are never built, copied nor read. The
 * check is the first thing on_cpu_sample does after its filters, and off_cpu_start (--off-cpu) after
 * its own; a kept sample or wait carries the rate it was kept at in its weight (struct
 * otelprof_sample), and user space counts it that many times (a wait's time weight times), so the
 * profile's totals stay unbiased. While the ceiling's second is spent, none is kept (counted apart:
 * those are lost). Both kinds count in the same counters. Included by profile.bpf.c only.
 */
#ifndef OTELPROFD_CPU_SHED_BPF_H
#define OTELPROFD_CPU_SHED_BPF_H

/* Written by user space through the mmapped .bss at every turn of its loop: keep 1 sample in this
 * many (0 or 1: every one; OTELPROF_SHED_KEEP_NONE: none). */
__u32 cpu_shed_keep_every = 0;

/* The weight of the current sample when it is kept (1, or the rate it was kept at), 0 when it is
 * shed (counted). */
static __always_inline __u32 cpu_shed_weight(void)
{
	__u32 every = *(volatile __u32 *)&cpu_shed_keep_every;

	if (every <= 1)
		return 1;
	if (every != OTELPROF_SHED_KEEP_NONE && bpf_get_prandom_u32() % every == 0)
		return every;
	count(every == OTELPROF_SHED_KEEP_NONE ? OTELPROF_CNT_CPU_SHED_SPENT : OTELPROF_CNT_CPU_SHED_SAMPLED);
	return 0;
}

#endif
