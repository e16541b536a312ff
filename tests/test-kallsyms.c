// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
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
	assert_ptr_equal(s->module, kallsyms_vmlinux); /* how the symbolizer tells the kernel's own text */
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

static void test_bounds(void **state)
{
	static const char modules[] =
		"ext4 8192 1 - Live 0xffffffffc0001000\n"
		"xfs 4096 0 - Live 0x0000000000000000\n"
		"bad line\n";
	struct kallsyms *k = parse(
		"ffffffff81000000 T _stext\n"
		"ffffffff81000100 T do_last\n"
		"ffffffff81000400 T _etext\n"
		"ffffffff82000000 t init_fn\n"
		"ffffffff82000100 T _einittext\n"
		"ffffffffc0001000 t ext4_read\t[ext4]\n"
		"ffffffffc0001800 t ext4_last\t[ext4]\n"
		"ffffffffc0004000 t xfs_only\t[xfs]\n");
	FILE *f = fmemopen((void *)modules, strlen(modules), "r");

	assert_non_null(k);
	/* The kernel's text ends at _etext / _einittext: past them is nobody's. */
	assert_string_equal(kallsyms_lookup(k, 0xffffffff810003ffULL)->name, "do_last");
	assert_null(kallsyms_lookup(k, 0xffffffff81000400ULL));
	assert_null(kallsyms_lookup(k, 0xffffffff81500000ULL));
	assert_string_equal(kallsyms_lookup(k, 0xffffffff82000010ULL)->name, "init_fn");
	assert_null(kallsyms_lookup(k, 0xffffffff82000200ULL));
	/* Without module ranges the last symbol of a module takes what follows; with them, not. */
	assert_string_equal(kallsyms_lookup(k, 0xffffffffc0003000ULL)->name, "ext4_last");
	assert_int_equal(kallsyms_set_module_ranges(k, f), 0);
	fclose(f);
	assert_string_equal(kallsyms_lookup(k, 0xffffffffc0002fffULL)->name, "ext4_last");
	assert_null(kallsyms_lookup(k, 0xffffffffc0003000ULL));
	/* A module whose address is hidden keeps the unbounded lookup. */
	assert_string_equal(kallsyms_lookup(k, 0xffffffffc0009000ULL)->name, "xfs_only");
	kallsyms_free(k);
}

/* Addresses: 16 digits (a 64-bit kernel's, the fast path), upper case, or fewer (a 32-bit kernel's);
 * a line whose 16 characters are not all hex digits, or with 17 digits, is skipped. */
static void test_addresses(void **state)
{
	struct kallsyms *k = parse(
		"FFFFFFFF81000000 T upper\n"
		"ffffffff8100000g T not_hex\n"
		"ffffffff810000100 T seventeen_digits\n"
		"ffffffff81000200 T\n"
		"ffffffff81000300 T _etext\n"
		"c1000000 T thirty_two\n"
		"c1000100 T _etext_not\n");
	const struct ksym *s;

	(void)state;
	assert_non_null(k);
	assert_int_equal(kallsyms_count(k), 4);
	assert_string_equal(kallsyms_lookup(k, 0xffffffff81000250ULL)->name, "upper");
	assert_null(kallsyms_lookup(k, 0xffffffff81000300ULL)); /* _etext ends the text */
	s = kallsyms_lookup(k, 0xc1000010ULL);
	assert_string_equal(s->name, "thirty_two");
	s = kallsyms_lookup(k, 0xc1000110ULL); /* a name that starts like _etext ends nothing */
	assert_string_equal(s->name, "_etext_not");
	assert_int_equal(s->end, 0);
	kallsyms_free(k);
}

static void test_hidden(void **state)
{
	struct kallsyms *k = parse("0000000000000000 T _stext\n0000000000000000 t do_one\n");

	assert_true(kallsyms_hidden(k));
	assert_null(kallsyms_lookup(k, 0xffffffff81000000ULL));
	kallsyms_free(k);
}

/* Read in blocks: a line longer than a block is skipped whole, lines around it and a last line
 * without a newline are kept, and unsorted input (modules before the kernel) is sorted. */
static void test_blocks(void **state)
{
	size_t long_len = 200000, len = 0;
	char *text = malloc(long_len + 4096);
	const struct ksym *s;
	struct kallsyms *k;

	(void)state;
	assert_non_null(text);
	len += (size_t)sprintf(text + len, "ffffffffc0001000 t ext4_read\t[ext4]\n");
	len += (size_t)sprintf(text + len, "ffffffff81000100 t before_long\n");
	len += (size_t)sprintf(text + len, "ffffffff81000200 t ");
	memset(text + len, 'x', long_len);
	len += long_len;
	len += (size_t)sprintf(text + len, "\nffffffff81000300 t after_long\n");
	len += (size_t)sprintf(text + len, "ffffffff81000400 t no_newline");
	k = parse(text);
	assert_non_null(k);
	assert_int_equal(kallsyms_count(k), 4);
	s = kallsyms_lookup(k, 0xffffffff81000250ULL);
	assert_string_equal(s->name, "before_long");
	s = kallsyms_lookup(k, 0xffffffff81000350ULL);
	assert_string_equal(s->name, "after_long");
	s = kallsyms_lookup(k, 0xffffffff81000450ULL);
	assert_string_equal(s->name, "no_newline");
	s = kallsyms_lookup(k, 0xffffffffc0001010ULL);
	assert_string_equal(s->name, "ext4_read");
	assert_string_equal(s->module, "ext4");
	kallsyms_free(k);
	free(text);
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
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_hidden),
		cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_real_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
