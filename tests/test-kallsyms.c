// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kallsyms.h"
#include "kallsyms_cache.h"
#include "kallsyms_table.h" /* the entries, to look up each one's address */

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


/* The on-disk cache (kallsyms_cache.h), in a directory of its own with made-up boot id, notes and
 * kallsyms files. */
static char cache_dir[] = "/tmp/test-kallsyms-cache-XXXXXX";
static char cache_file[256], text_file[256], boot_file[256], notes_file[256];

static const char cache_text[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000100 t do_one\n"
	"ffffffff81000300 T _etext\n"
	"ffffffffc0001000 t ext4_read\t[ext4]\n"
	"ffffffffc0004000 t bpf_prog_6deef7357e7b4530_on_cpu\t[bpf]\n";

static void write_text(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

/* A GNU build id note after another note, as /sys/kernel/notes holds them. */
static void write_notes(unsigned char id_byte)
{
	unsigned char notes[64] = { 0 };
	uint32_t other[3] = { 4, 4, 6 }, gnu[3] = { 4, 20, 3 };

	memcpy(notes, other, 12);
	memcpy(notes + 12, "Xen", 4);
	memcpy(notes + 20, gnu, 12);
	memcpy(notes + 32, "GNU", 4);
	memset(notes + 36, id_byte, 20);
	write_text(notes_file, notes, 56);
}

static int cache_setup(void **state)
{
	(void)state;
	strcpy(cache_dir, "/tmp/test-kallsyms-cache-XXXXXX");
	if (!mkdtemp(cache_dir))
		return -1;
	snprintf(cache_file, sizeof(cache_file), "%s/cache/kallsyms", cache_dir);
	snprintf(text_file, sizeof(text_file), "%s/kallsyms", cache_dir);
	snprintf(boot_file, sizeof(boot_file), "%s/boot_id", cache_dir);
	snprintf(notes_file, sizeof(notes_file), "%s/notes", cache_dir);
	write_text(text_file, cache_text, strlen(cache_text));
	write_text(boot_file, "2d96ea8a-2dab-49f9-852b-8432b7e22263\n", 37);
	write_notes(0xab);
	return 0;
}

static int cache_teardown(void **state)
{
	char dir[300];

	(void)state;
	unlink(cache_file);
	snprintf(dir, sizeof(dir), "%s/cache", cache_dir);
	rmdir(dir);
	unlink(text_file);
	unlink(boot_file);
	unlink(notes_file);
	rmdir(cache_dir);
	return 0;
}

static void key_now(struct kallsyms_cache_key *key)
{
	assert_int_equal(kallsyms_cache_key_read(key, text_file, 42, boot_file, notes_file), 0);
}

/* A table saved and read back: the kernel's text and modules with a range, not BPF programs. */
static void save_one(struct kallsyms_cache_key *key)
{
	static const char modules[] = "ext4 8192 1 - Live 0xffffffffc0001000\n";
	FILE *f = fmemopen((void *)modules, strlen(modules), "r");
	struct kallsyms *k = parse(cache_text);

	assert_non_null(k);
	assert_int_equal(kallsyms_set_module_ranges(k, f), 0);
	fclose(f);
	key_now(key);
	assert_int_equal(kallsyms_cache_write(cache_file, k, key), 0);
	kallsyms_free(k);
}

static void test_cache_round_trip(void **state)
{
	struct kallsyms_cache_key key;
	struct kallsyms *k;
	struct stat st;

	(void)state;
	save_one(&key);
	assert_int_equal(key.build_id_len, 20);
	assert_int_equal(key.build_id[0], 0xab);
	assert_memory_equal(key.boot_id, "2d96ea8a-2dab", 13);
	assert_int_equal(stat(cache_file, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	k = kallsyms_cache_read(cache_file, &key);
	assert_non_null(k);
	assert_true(kallsyms_partial(k));
	assert_int_equal(kallsyms_count(k), 4); /* the BPF program is not saved */
	assert_string_equal(kallsyms_lookup(k, 0xffffffff81000150ULL)->name, "do_one");
	assert_ptr_equal(kallsyms_lookup(k, 0xffffffff81000150ULL)->module, kallsyms_vmlinux);
	assert_string_equal(kallsyms_lookup(k, 0xffffffffc0001010ULL)->module, "ext4");
	assert_null(kallsyms_lookup(k, 0xffffffff81000300ULL));
	assert_null(kallsyms_lookup(k, 0xffffffffc0004010ULL)); /* past ext4's end: a full read names it */
	/* Partial tables and hidden ones are never saved. */
	assert_int_equal(kallsyms_cache_write(cache_file, k, &key), -EINVAL);
	kallsyms_free(k);
	k = parse("0000000000000000 T _stext\n0000000000000000 t do_one\n");
	assert_int_equal(kallsyms_cache_write(cache_file, k, &key), -EINVAL);
	kallsyms_free(k);
}

/* The same answer from both tables at every symbol's address and beside it. */
static void assert_same_lookups(const struct kallsyms *full, const struct kallsyms *joined)
{
	for (size_t i = 0; i < full->count; i++)
		for (int d = -1; d <= 1; d++) {
			uint64_t a = full->syms[i].address + (uint64_t)(int64_t)d;
			const struct ksym *x = kallsyms_lookup(full, a), *y;
			struct ksym want;

			if (!x) {
				assert_null(kallsyms_lookup(joined, a));
				continue;
			}
			want = *x;
			y = kallsyms_lookup(joined, a);
			assert_non_null(y);
			assert_true(want.address == y->address && want.end == y->end);
			assert_string_equal(want.name, y->name);
			assert_string_equal(want.module, y->module);
		}
}

/* A full read kept as the cache's mapped table plus what the cache leaves out: every lookup as the
 * full table's, not partial; refused when the cache holds another table. */
static void join_and_compare(struct kallsyms *full)
{
	struct kallsyms_cache_key key;
	struct kallsyms *cached;

	key_now(&key);
	assert_int_equal(kallsyms_cache_write(cache_file, full, &key), 0);
	cached = kallsyms_cache_read(cache_file, &key);
	assert_non_null(cached);
	assert_int_equal(kallsyms_cache_join(cached, full), 0);
	assert_false(kallsyms_partial(cached));
	assert_int_equal(kallsyms_count(cached), kallsyms_count(full));
	assert_same_lookups(full, cached);
	assert_int_equal(kallsyms_cache_join(cached, full), -EINVAL); /* joined already */
	kallsyms_free(cached);
}

static void test_cache_join(void **state)
{
	static const char modules[] = "ext4 8192 1 - Live 0xffffffffc0001000\n";
	FILE *f = fmemopen((void *)modules, strlen(modules), "r");
	struct kallsyms_cache_key key;
	struct kallsyms *full = parse(cache_text), *other, *cached;

	(void)state;
	assert_int_equal(kallsyms_set_module_ranges(full, f), 0);
	fclose(f);
	join_and_compare(full);
	assert_string_equal(kallsyms_lookup(full, 0xffffffffc0004010ULL)->name, "bpf_prog_6deef7357e7b4530_on_cpu");
	/* A cache of another table (another module set): not joined. */
	other = parse("ffffffff81000000 T _stext\nffffffff81000200 t do_two\nffffffff81000300 T _etext\n");
	key_now(&key);
	assert_int_equal(kallsyms_cache_write(cache_file, other, &key), 0);
	cached = kallsyms_cache_read(cache_file, &key);
	assert_non_null(cached);
	assert_int_equal(kallsyms_cache_join(cached, full), -ESTALE);
	assert_true(kallsyms_partial(cached));
	kallsyms_free(cached);
	kallsyms_free(other);
	kallsyms_free(full);

	/* This machine's own, BPF programs and modules included, when it shows the addresses. */
	full = kallsyms_load("/proc/kallsyms");
	if (full && !kallsyms_hidden(full) && (f = fopen("/proc/modules", "re"))) {
		assert_int_equal(kallsyms_set_module_ranges(full, f), 0);
		fclose(f);
		join_and_compare(full);
	}
	kallsyms_free(full);
}

/* Another boot, kernel, module set, or what kallsyms shows now (hidden, KASLR): not used. */
static void test_cache_stale(void **state)
{
	struct kallsyms_cache_key key, now;
	struct kallsyms *k;

	(void)state;
	save_one(&key);
	write_text(boot_file, "00000000-2dab-49f9-852b-8432b7e22263\n", 37);
	key_now(&now);
	assert_null(kallsyms_cache_read(cache_file, &now));
	assert_int_equal(errno, ESTALE);
	cache_teardown(state);
	cache_setup(state);
	save_one(&key);
	write_notes(0xcd);
	key_now(&now);
	assert_null(kallsyms_cache_read(cache_file, &now));
	assert_int_equal(errno, ESTALE);
	write_notes(0xab);
	write_text(text_file, "0000000000000000 T _stext\n", 26);
	key_now(&now);
	assert_null(kallsyms_cache_read(cache_file, &now));
	assert_int_equal(errno, ESTALE);
	write_text(text_file, cache_text, strlen(cache_text));
	assert_int_equal(kallsyms_cache_key_read(&now, text_file, 43, boot_file, notes_file), 0);
	assert_null(kallsyms_cache_read(cache_file, &now));
	assert_int_equal(errno, ESTALE);
	key_now(&now);
	k = kallsyms_cache_read(cache_file, &now);
	assert_non_null(k);
	kallsyms_free(k);
}

/* A file others could have written, or reached through a link, is refused. */
static void test_cache_refused(void **state)
{
	struct kallsyms_cache_key key;
	char dir[300], link_path[320];
	struct kallsyms *k;

	(void)state;
	save_one(&key);
	assert_int_equal(chmod(cache_file, 0644), 0);
	assert_null(kallsyms_cache_read(cache_file, &key));
	assert_int_equal(errno, EPERM);
	assert_int_equal(chmod(cache_file, 0600), 0);
	snprintf(dir, sizeof(dir), "%s/cache", cache_dir);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_null(kallsyms_cache_read(cache_file, &key));
	assert_int_equal(errno, EPERM);
	assert_int_equal(chmod(dir, 0700), 0);
	snprintf(link_path, sizeof(link_path), "%s/link", dir);
	assert_int_equal(symlink(cache_file, link_path), 0);
	assert_null(kallsyms_cache_read(link_path, &key));
	assert_int_equal(errno, EPERM);
	unlink(link_path);
	assert_null(kallsyms_cache_read("/nonexistent/kallsyms", &key));
	assert_int_equal(errno, ENOENT);
	k = kallsyms_cache_read(cache_file, &key);
	assert_non_null(k);
	kallsyms_free(k);

	/* In a directory anyone can write (a Kubernetes emptyDir is 0777), the cache gets a 0700
	 * directory of its own, and is read from it. */
	{
		char shared[300], own[320], file[340];
		struct stat st;

		snprintf(shared, sizeof(shared), "%s/shared", cache_dir);
		snprintf(own, sizeof(own), "%s/kernel", shared);
		snprintf(file, sizeof(file), "%s/kallsyms", own);
		assert_int_equal(mkdir(shared, 0777), 0);
		assert_int_equal(chmod(shared, 0777), 0);
		k = parse(cache_text);
		assert_int_equal(kallsyms_cache_write(file, k, &key), 0);
		kallsyms_free(k);
		assert_int_equal(stat(own, &st), 0);
		assert_int_equal(st.st_mode & 0777, 0700);
		k = kallsyms_cache_read(file, &key);
		assert_non_null(k);
		kallsyms_free(k);
		unlink(file);
		rmdir(own);
		rmdir(shared);
	}
}

/* Flip one byte at a time through the file: every copy is refused or read back safely (bounds,
 * order), never out of bounds (the ASan build checks that). Then a short file. */
static void test_cache_malformed(void **state)
{
	struct kallsyms_cache_key key;
	unsigned char *data;
	struct stat st;
	int fd;

	(void)state;
	save_one(&key);
	assert_int_equal(stat(cache_file, &st), 0);
	data = malloc((size_t)st.st_size);
	assert_non_null(data);
	fd = open(cache_file, O_RDONLY);
	assert_int_equal(read(fd, data, (size_t)st.st_size), st.st_size);
	close(fd);
	for (off_t i = 0; i < st.st_size; i++) {
		struct kallsyms *k;

		data[i] ^= 0x80;
		write_text(cache_file, data, (size_t)st.st_size);
		chmod(cache_file, 0600);
		k = kallsyms_cache_read(cache_file, &key);
		if (k) {
			for (uint64_t a = 0xffffffff81000000ULL; a < 0xffffffff81000400ULL; a += 0x80)
				kallsyms_lookup(k, a);
			kallsyms_lookup(k, 0xffffffffc0001010ULL);
		} else {
			assert_true(errno == EBADMSG || errno == ESTALE);
		}
		kallsyms_free(k);
		data[i] ^= 0x80;
	}
	write_text(cache_file, data, (size_t)st.st_size - 1);
	chmod(cache_file, 0600);
	assert_null(kallsyms_cache_read(cache_file, &key));
	assert_int_equal(errno, EBADMSG);
	free(data);
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
		cmocka_unit_test_setup_teardown(test_cache_round_trip, cache_setup, cache_teardown),
		cmocka_unit_test_setup_teardown(test_cache_join, cache_setup, cache_teardown),
		cmocka_unit_test_setup_teardown(test_cache_stale, cache_setup, cache_teardown),
		cmocka_unit_test_setup_teardown(test_cache_refused, cache_setup, cache_teardown),
		cmocka_unit_test_setup_teardown(test_cache_malformed, cache_setup, cache_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
