#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "kallsyms.h"

static struct kallsyms *parse(const char *text)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct kallsyms *k = kallsyms_parse(f);

	fclose(f);
	return k;
}

static void test_lookup(void **state)
{
	struct kallsyms *k = parse(
		"ffffffff81000000 T _stext\n"
		"ffffffff81000100 t do_one\n"
		"ffffffff81000200 D some_data\n"
		"ffffffff81000300 T do_two\n"
		"ffffffffc0001000 t ext4_read\t[ext4]\n"
		"ffffffffc0002000 t bpf_prog_6deef7357e7b4530_on_cpu\t[bpf]\n"
		"garbage line\n"
		"ffffffff8100 X\n");
	const struct ksym *s;

	assert_non_null(k);
	assert_int_equal(kallsyms_count(k), 5);
	assert_false(kallsyms_hidden(k));
	s = kallsyms_lookup(k, 0xffffffff81000150ULL);
	assert_string_equal(s->name, "do_one");
	assert_string_equal(s->module, "vmlinux");
	/* Data symbols are skipped: an address after some_data belongs to do_one. */
	s = kallsyms_lookup(k, 0xffffffff81000250ULL);
	assert_string_equal(s->name, "do_one");
	s = kallsyms_lookup(k, 0xffffffffc0001010ULL);
	assert_string_equal(s->name, "ext4_read");
	assert_string_equal(s->module, "ext4");
	s = kallsyms_lookup(k, 0xffffffffc0002008ULL);
	assert_string_equal(s->module, "bpf");
	assert_null(kallsyms_lookup(k, 0x1000));
	kallsyms_free(k);
}

static void test_hidden(void **state)
{
	struct kallsyms *k = parse("0000000000000000 T _stext\n0000000000000000 t do_one\n");

	assert_true(kallsyms_hidden(k));
	assert_null(kallsyms_lookup(k, 0xffffffff81000000ULL));
	kallsyms_free(k);
}

static void test_real_file(void **state)
{
	struct kallsyms *k = kallsyms_load("/proc/kallsyms");

	assert_non_null(k);
	kallsyms_free(k);
	assert_null(kallsyms_load("/nonexistent/kallsyms"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_hidden),
		cmocka_unit_test(test_real_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
