// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

static void expect(const char *mangled, const char *want)
{
	char *got = sym_demangle(mangled);

	if (!want) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_cxx(void **state)
{
	expect("_ZN6shapes3BoxIiE4growEi", "shapes::Box<int>::grow(int)");
	expect("_ZN6shapes5twiceIiEET_S1_", "int shapes::twice<int>(int)");
	expect("_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back(int const&)");
	/* gcc's clone suffixes */
	expect("_Z3fooi.cold", "foo(int) [clone .cold]");
}

static void test_rust(void **state)
{
	/* legacy: hash dropped */
	expect("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write");
	expect("_ZN3foo3bar17h05af221e174051e9E", "foo::bar");
	/* v0 */
	expect("_RNvCs1234_7mycrate4main", "mycrate::main");
	expect("_RNvNtCs1234_7mycrate3foo3bar", "mycrate::foo::bar");
}

static void test_not_mangled(void **state)
{
	expect("main", NULL);
	expect("", NULL);
	expect(NULL, NULL);
	expect("_Zgarbage((", NULL);
}

static void test_hostile(void **state)
{
	/* Deeply nested templates: the recursion limit must stop it, not the stack. */
	size_t n = 3000;
	char *s = malloc(4 * n + 16), *p = s;

	p += sprintf(p, "_Z1f");
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "IS_");
	*p = 0;
	free(sym_demangle(s));
	/* Too long: refused without looking. */
	s = realloc(s, SYM_DEMANGLE_MAX_INPUT + 10);
	memset(s, 'a', SYM_DEMANGLE_MAX_INPUT + 9);
	memcpy(s, "_ZN", 3);
	s[SYM_DEMANGLE_MAX_INPUT + 9] = 0;
	assert_null(sym_demangle(s));
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cxx),
		cmocka_unit_test(test_rust),
		cmocka_unit_test(test_not_mangled),
		cmocka_unit_test(test_hostile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
