// SPDX-License-Identifier: Apache-2.0
/*
 * The vDSO: a [vdso] mapping (no file) is named and unwound from the symbolizer's own vDSO image,
 * in this process and in another one (a child: the same image at the same base), with its global
 * names (__vdso_clock_gettime, not the weak alias clock_gettime), its build id, and its .eh_frame.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolizer.h"

static uint64_t vdso_function(const char *name)
{
	void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void *f = h ? dlsym(h, name) : NULL;

	return (uint64_t)(uintptr_t)f;
}

static void check_named(struct symbolizer *s, pid_t pid, uint64_t address, const char *want)
{
	struct sym_frame f;

	assert_int_equal(symbolizer_user(s, pid, address, &f), 0);
	assert_true(f.has_mapping);
	assert_string_equal(f.mapping.path, "[vdso]");
	assert_non_null(f.mapping.build_id);
	assert_true(f.nlines >= 1);
	assert_non_null(f.lines[0].function);
	assert_string_equal(f.lines[0].function, want);
}

static void test_named(void **state)
{
	struct symbolizer *s = symbolizer_new(&(struct symbolizer_config){ .no_debuginfod = true });
	uint64_t gettime = vdso_function("__vdso_clock_gettime"), tod = vdso_function("__vdso_gettimeofday");
	pid_t child;

	(void)state;
	if (!gettime || !tod)
		skip(); /* no vDSO (or another architecture's names) */
	assert_int_equal(vdso_function("clock_gettime"), gettime); /* the weak alias, same address */
	check_named(s, getpid(), gettime + 4, "__vdso_clock_gettime");
	check_named(s, getpid(), tod + 4, "__vdso_gettimeofday");
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	check_named(s, child, gettime + 4, "__vdso_clock_gettime");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_int_equal(symbolizer_stats(s)->vdso_frames, 3);
	assert_int_equal(symbolizer_stats(s)->vdso_refused, 0);
	assert_int_equal(symbolizer_stats(s)->no_mapping, 0);
	symbolizer_free(s);
}

__attribute__((noinline)) static void caller(void)
{
	__asm__ volatile("" ::: "memory");
}

/* At the first instruction of __vdso_clock_gettime the return address is at sp: only the vDSO's
 * CFI says so (bp is 0: no frame-pointer chain to follow). */
static void test_unwound(void **state)
{
	struct symbolizer *s = symbolizer_new(&(struct symbolizer_config){ .no_debuginfod = true });
	uint64_t gettime = vdso_function("__vdso_clock_gettime"), ret = (uint64_t)(uintptr_t)&caller + 1;
	uint64_t stack[4] = { ret, 0, 0, 0 }, ips[4];
	struct unwind_result result;
	struct sym_unwind_input in = {
		.ip = gettime, .sp = (uint64_t)(uintptr_t)stack, .bp = 0, .stack = stack, .stack_size = sizeof(stack),
	};

	(void)state;
	if (!gettime)
		skip();
	assert_true(symbolizer_unwind(s, getpid(), &in, ips, 4, &result) >= 2);
	assert_int_equal(ips[0], gettime);
	assert_int_equal(ips[1], ret);
	assert_true(result.cfi_frames >= 1);
	symbolizer_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_named),
		cmocka_unit_test(test_unwound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
