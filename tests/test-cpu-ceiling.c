// SPDX-License-Identifier: Apache-2.0
/* --max-cpu's arithmetic (ops/cpu_ceiling.c): the shedding order, a window's share, and the level
 * moving one step a window, on times given by the test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ops/cpu_ceiling.h"
#include "records.h"

#define MS 1000000ULL
#define S (1000 * MS)

static void test_off(void **state)
{
	struct cpu_ceiling c;

	(void)state;
	cpu_ceiling_init(&c, 0, 0, 0);
	assert_int_equal(cpu_ceiling_update(&c, 2 * S, 2 * S), CPU_SHED_NONE); /* 100% for 2 s: nothing shed */
	assert_int_equal(c.windows_over, 0);
}

/* Under the ceiling nothing is shed; a window whose share is spent drops samples until it ends. */
static void test_window_share(void **state)
{
	struct cpu_ceiling c;

	(void)state;
	cpu_ceiling_init(&c, 10, 0, 0);
	assert_int_equal(cpu_ceiling_update(&c, 500 * MS, 50 * MS), CPU_SHED_NONE);
	assert_int_equal(cpu_ceiling_update(&c, 600 * MS, 99 * MS), CPU_SHED_NONE);
	assert_int_equal(cpu_ceiling_update(&c, 700 * MS, 100 * MS), CPU_SHED_DROP_SAMPLES); /* 10% of 1 s spent */
	assert_int_equal(cpu_ceiling_update(&c, 900 * MS, 101 * MS), CPU_SHED_DROP_SAMPLES);
	assert_int_equal(c.windows_spent, 1);
	/* The window ends at 10.1%: over, one step up (opens deferred), and a new share. */
	assert_int_equal(cpu_ceiling_update(&c, S, 101 * MS), CPU_SHED_DEFER_OPENS);
	assert_int_equal(c.windows_over, 1);
	assert_true(c.last_percent > 10 && c.last_percent < 10.2);
}

/* The level climbs one step a window over the ceiling, to dropping samples, and comes down one step
 * a window under 70% of it (not at 70-100%: no flapping). */
static void test_levels(void **state)
{
	struct cpu_ceiling c;
	uint64_t now = 0, cpu = 0;

	(void)state;
	cpu_ceiling_init(&c, 20, now, cpu);
	for (int i = 0; i < 3; i++) {
		now += S;
		cpu += 300 * MS; /* 30% */
		cpu_ceiling_update(&c, now, cpu);
	}
	assert_int_equal(c.level, CPU_SHED_DROP_SAMPLES);
	assert_int_equal(c.windows_over, 3);
	now += S;
	cpu += 150 * MS; /* 15%: between 70% and 100% of the ceiling, the level stays */
	assert_int_equal(cpu_ceiling_update(&c, now, cpu), CPU_SHED_DROP_SAMPLES);
	assert_int_equal(cpu_ceiling_keep_every(&c), 4 * CPU_SHED_KEEP_FIRST);
	/* 5%: the kernel keeps twice as many samples a window, then the level steps down. */
	for (uint32_t keep = 2 * CPU_SHED_KEEP_FIRST; keep >= 2; keep /= 2) {
		now += S;
		cpu += 50 * MS;
		assert_int_equal(cpu_ceiling_update(&c, now, cpu), CPU_SHED_DROP_SAMPLES);
		assert_int_equal(cpu_ceiling_keep_every(&c), keep);
	}
	now += S;
	cpu += 50 * MS;
	assert_int_equal(cpu_ceiling_update(&c, now, cpu), CPU_SHED_DEFER_OPENS);
	assert_int_equal(cpu_ceiling_keep_every(&c), 1);
	now += S;
	cpu += 50 * MS;
	assert_int_equal(cpu_ceiling_update(&c, now, cpu), CPU_SHED_NONE);
	assert_string_equal(cpu_shed_level_name(CPU_SHED_NONE), "none");
	assert_string_equal(cpu_shed_level_name(CPU_SHED_DEFER_OPENS), "defer_opens");
	assert_string_equal(cpu_shed_level_name(CPU_SHED_DROP_SAMPLES), "drop_samples");
}

/* The kernel's keep rate: 1 until samples are shed, CPU_SHED_KEEP_FIRST on entering that level, 4
 * times fewer a window over the ceiling up to CPU_SHED_KEEP_MAX, none while a window's share is
 * spent, and back to the level's rate when the next window begins. */
static void test_keep_every(void **state)
{
	struct cpu_ceiling c;
	uint64_t now = 0, cpu = 0;

	(void)state;
	cpu_ceiling_init(&c, 1, now, cpu);
	assert_int_equal(cpu_ceiling_keep_every(&c), 1);
	now += S;
	cpu += 20 * MS; /* 2% */
	assert_int_equal(cpu_ceiling_update(&c, now, cpu), CPU_SHED_DEFER_OPENS);
	assert_int_equal(cpu_ceiling_keep_every(&c), 1);
	now += S;
	cpu += 20 * MS;
	assert_int_equal(cpu_ceiling_update(&c, now, cpu), CPU_SHED_DROP_SAMPLES);
	assert_int_equal(cpu_ceiling_keep_every(&c), CPU_SHED_KEEP_FIRST);
	for (int i = 0; i < 8; i++) {
		now += S;
		cpu += 20 * MS;
		cpu_ceiling_update(&c, now, cpu);
	}
	assert_int_equal(cpu_ceiling_keep_every(&c), CPU_SHED_KEEP_MAX);
	/* 10 ms of the window's 10 ms share spent half-way: none kept until it ends. */
	cpu += 10 * MS;
	assert_int_equal(cpu_ceiling_update(&c, now + S / 2, cpu), CPU_SHED_DROP_SAMPLES);
	assert_int_equal(cpu_ceiling_keep_every(&c), OTELPROF_SHED_KEEP_NONE);
	now += S;
	assert_int_equal(cpu_ceiling_update(&c, now, cpu), CPU_SHED_DROP_SAMPLES);
	assert_int_equal(cpu_ceiling_keep_every(&c), CPU_SHED_KEEP_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_window_share),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_keep_every),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
