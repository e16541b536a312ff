// SPDX-License-Identifier: Apache-2.0
/* The --max-cpu ceiling's arithmetic (ops/cpu_ceiling.h). */
#include "ops/cpu_ceiling.h"

#include "records.h" /* OTELPROF_SHED_KEEP_NONE */

void cpu_ceiling_init(struct cpu_ceiling *c, double max_percent, uint64_t now, uint64_t cpu_ns)
{
	*c = (struct cpu_ceiling){
		.max_percent = max_percent > 0 ? max_percent : 0, .window_start_ns = now, .window_start_cpu_ns = cpu_ns,
		.keep_every = 1,
	};
}

enum cpu_shed_level cpu_ceiling_update(struct cpu_ceiling *c, uint64_t now, uint64_t cpu_ns)
{
	uint64_t elapsed = now - c->window_start_ns, used = cpu_ns - c->window_start_cpu_ns;

	if (c->max_percent <= 0)
		return CPU_SHED_NONE;
	if (elapsed >= CPU_CEILING_WINDOW_NS) {
		c->last_percent = 100.0 * (double)used / (double)elapsed;
		if (c->last_percent > c->max_percent) {
			c->windows_over++;
			if (c->level == CPU_SHED_DROP_SAMPLES)
				c->keep_every = c->keep_every * 4 < CPU_SHED_KEEP_MAX ? c->keep_every * 4 : CPU_SHED_KEEP_MAX;
			else if (++c->level == CPU_SHED_DROP_SAMPLES)
				c->keep_every = CPU_SHED_KEEP_FIRST;
		} else if (c->last_percent < c->max_percent * CPU_CEILING_RELAX_PERCENT / 100 && c->level > CPU_SHED_NONE) {
			/* Samples come back gradually: one step down once all of them are kept again. */
			if (c->level == CPU_SHED_DROP_SAMPLES && c->keep_every > 2)
				c->keep_every /= 2;
			else
				c->level--;
		}
		if (c->level < CPU_SHED_DROP_SAMPLES)
			c->keep_every = 1;
		c->window_start_ns = now;
		c->window_start_cpu_ns = cpu_ns;
		c->window_spent = false;
		return c->level;
	}
	if (!c->window_spent && (double)used >= c->max_percent / 100.0 * (double)CPU_CEILING_WINDOW_NS) {
		c->window_spent = true;
		c->windows_spent++;
	}
	return c->window_spent ? CPU_SHED_DROP_SAMPLES : c->level;
}

uint32_t cpu_ceiling_keep_every(const struct cpu_ceiling *c)
{
	if (c->window_spent)
		return OTELPROF_SHED_KEEP_NONE;
	return c->level == CPU_SHED_DROP_SAMPLES ? c->keep_every : 1;
}

const char *cpu_shed_level_name(enum cpu_shed_level level)
{
	switch (level) {
	case CPU_SHED_DEFER_OPENS:
		return "defer_opens";
	case CPU_SHED_DROP_SAMPLES:
		return "drop_samples";
	case CPU_SHED_NONE:
		break;
	}
	return "none";
}
