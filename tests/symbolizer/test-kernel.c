// SPDX-License-Identifier: Apache-2.0
/*
 * The symbolizer's kernel symbols: kallsyms is read at the first kernel lookup, not at start, and read
 * again only while frames land in code that can change without /proc/modules changing (BPF programs,
 * ftrace trampolines) or miss every symbol; frames in the kernel's own text never cause a re-read.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolizer.h"

static char path[] = "/tmp/test-sym-kernel-XXXXXX";

/* kallsyms with fillers more symbols of the kernel's text before _stext (the real file's size:
 * 200,000 makes its read take tens of milliseconds). */
static void write_kallsyms_sized(const char *bpf_name, int fillers)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	/* More than the bytes the cache compares (KALLSYMS_CACHE_HEAD) before what changes, as in the
	 * kernel's file: changing a BPF program leaves its head as it was. */
	for (int i = 0; i < 16; i++)
		fprintf(f, "ffffffff800%05x t early_text_%d\n", i * 0x100, i);
	for (int i = 0; i < fillers; i++)
		fprintf(f, "ffffffff80%06x t filler_text_%d\n", 0x10000 + i * 0x10, i);
	fprintf(f, "ffffffff81000000 T _stext\n"
		   "ffffffff81000100 t schedule\n"
		   "ffffffff81000300 T _etext\n"
		   "ffffffffa0001000 t %s\t[bpf]\n",
		bpf_name);
	fclose(f);
}

static void write_kallsyms(const char *bpf_name)
{
	write_kallsyms_sized(bpf_name, 0);
}

static const char *kernel_name(struct symbolizer *s, uint64_t address, struct sym_frame *f)
{
	if (symbolizer_kernel(s, address, f) || !f->nlines)
		return "";
	return f->lines[0].function;
}

static void test_lazy_and_refresh(void **state)
{
	struct symbolizer *s;
	struct sym_frame f;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	write_kallsyms("bpf_prog_1111_old");
	s = symbolizer_new(&(struct symbolizer_config){
		.kallsyms_path = path, .kallsyms_refresh_ns = 1, .no_debuginfod = true });
	assert_non_null(s);

	/* Not read at start: a file changed before the first kernel lookup is the one seen. */
	write_kallsyms("bpf_prog_2222_first");
	assert_string_equal(kernel_name(s, 0xffffffffa0001010ULL, &f), "bpf_prog_2222_first");
	assert_string_equal(f.module, "bpf");

	/* The kernel's own text never moves: frames there alone cost no re-read. */
	write_kallsyms("bpf_prog_3333_second");
	symbolizer_maintain(s); /* counts the BPF lookup above: one re-read */
	assert_int_equal(symbolizer_stats(s)->kallsyms_reloads, 1);
	assert_string_equal(kernel_name(s, 0xffffffff81000150ULL, &f), "schedule");
	assert_string_equal(f.module, "vmlinux");
	usleep(1000);
	symbolizer_maintain(s);
	assert_int_equal(symbolizer_stats(s)->kallsyms_reloads, 1);

	/* A BPF frame: read again (here at once, refresh 1 ns), so a replaced program gets its name. */
	write_kallsyms("bpf_prog_4444_third");
	assert_string_equal(kernel_name(s, 0xffffffffa0001010ULL, &f), "bpf_prog_3333_second");
	usleep(1000);
	symbolizer_maintain(s);
	assert_int_equal(symbolizer_stats(s)->kallsyms_reloads, 2);
	assert_string_equal(kernel_name(s, 0xffffffffa0001010ULL, &f), "bpf_prog_4444_third");

	/* An address no symbol covers (past _etext, before any module) is a reason to look again. */
	usleep(1000);
	symbolizer_maintain(s); /* the BPF lookup just above */
	assert_int_equal(symbolizer_stats(s)->kallsyms_reloads, 3);
	assert_int_equal(symbolizer_kernel(s, 0xffffffff81000400ULL, &f), -ENOENT);
	usleep(1000);
	symbolizer_maintain(s);
	assert_int_equal(symbolizer_stats(s)->kallsyms_reloads, 4);
	usleep(1000);
	symbolizer_maintain(s); /* no lookup since */
	assert_int_equal(symbolizer_stats(s)->kallsyms_reloads, 4);

	symbolizer_free(s);
	unlink(path);
}

/* Loaded ahead (as the daemon does at start): the file as it was then is the one used. */
static void test_load_ahead(void **state)
{
	struct symbolizer *s;
	struct sym_frame f;
	int fd;

	(void)state;
	strcpy(path, "/tmp/test-sym-kernel-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	write_kallsyms("bpf_prog_5555_at_start");
	s = symbolizer_new(&(struct symbolizer_config){ .kallsyms_path = path, .no_debuginfod = true });
	assert_non_null(s);
	symbolizer_load_kallsyms(s);
	symbolizer_load_kallsyms(s); /* idempotent */
	write_kallsyms("bpf_prog_6666_later");
	assert_string_equal(kernel_name(s, 0xffffffffa0001010ULL, &f), "bpf_prog_5555_at_start");
	assert_int_equal(symbolizer_stats(s)->kallsyms_reloads, 0);
	symbolizer_free(s);
	unlink(path);
}

/* A symbolizer that never sees a kernel frame never reads kallsyms, nor re-reads it. */
static void test_never_read_without_kernel_frames(void **state)
{
	struct symbolizer *s = symbolizer_new(&(struct symbolizer_config){
		.kallsyms_path = "/nonexistent/kallsyms", .kallsyms_refresh_ns = 1, .no_debuginfod = true });

	(void)state;
	assert_non_null(s);
	symbolizer_maintain(s);
	assert_int_equal(symbolizer_stats(s)->kallsyms_reloads, 0);
	symbolizer_free(s);
}

/* A fresh kallsyms file (path) and a directory for the cache (dir, the file cache in it). */
static void cache_files(char *dir, char *cache, size_t size)
{
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(cache, size, "%s/kallsyms", dir);
	strcpy(path, "/tmp/test-sym-kernel-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
}

/*
 * The cache (symbolizer/kallsyms_cache.h): a full read saves the lasting symbols, the next symbolizer
 * of the boot reads them back instead, and a frame the saved table cannot name (a BPF program's)
 * reads the whole file at once, so that it is named as without the cache. Hidden addresses are
 * never saved, and a cache whose head no longer matches what kallsyms shows is not used.
 */
static void test_cache(void **state)
{
	char dir[] = "/tmp/test-sym-kernel-cache-XXXXXX", cache[64];
	const struct symbolizer_stats *st;
	struct symbolizer_config config = { .kallsyms_path = path, .kallsyms_cache_path = cache,
					    .no_debuginfod = true };
	struct symbolizer *s;
	struct sym_frame f;
	FILE *hidden;

	(void)state;
	cache_files(dir, cache, sizeof(cache));
	write_kallsyms("bpf_prog_7777_saved");

	s = symbolizer_new(&config);
	assert_string_equal(kernel_name(s, 0xffffffff81000150ULL, &f), "schedule");
	st = symbolizer_stats(s);
	assert_int_equal(st->kallsyms_full_reads, 1);
	assert_int_equal(st->kallsyms_cache_stale, 1);
	assert_int_equal(st->kallsyms_cache_writes, 1);
	symbolizer_free(s);

	/* The next run of the boot: the kernel's text from the cache, no read of kallsyms. */
	write_kallsyms("bpf_prog_8888_now");
	s = symbolizer_new(&config);
	assert_string_equal(kernel_name(s, 0xffffffff81000150ULL, &f), "schedule");
	assert_string_equal(f.module, "vmlinux");
	st = symbolizer_stats(s);
	assert_int_equal(st->kallsyms_cache_hits, 1);
	assert_int_equal(st->kallsyms_full_reads, 0);
	/* A BPF frame: not in the cache; kallsyms is read now and names it with today's program. */
	assert_string_equal(kernel_name(s, 0xffffffffa0001010ULL, &f), "bpf_prog_8888_now");
	assert_string_equal(f.module, "bpf");
	assert_int_equal(st->kallsyms_full_reads, 1);
	assert_int_equal(st->kallsyms_cache_writes, 0); /* the file holds this table's lasting part */
	assert_int_equal(symbolizer_kernel(s, 0xffffffff81000400ULL, &f), -ENOENT);
	assert_int_equal(st->kallsyms_full_reads, 1); /* a full table's misses wait for maintain() */
	symbolizer_free(s);

	/* Addresses hidden now (kptr_restrict): the cache does not match, nothing is saved. */
	hidden = fopen(path, "w");
	assert_non_null(hidden);
	fputs("0000000000000000 T _stext\n0000000000000000 t schedule\n", hidden);
	fclose(hidden);
	s = symbolizer_new(&config);
	assert_int_equal(symbolizer_kernel(s, 0xffffffff81000150ULL, &f), -ENOENT);
	st = symbolizer_stats(s);
	assert_true(st->kallsyms_hidden);
	assert_int_equal(st->kallsyms_cache_hits, 0);
	assert_int_equal(st->kallsyms_cache_stale, 1);
	assert_int_equal(st->kallsyms_cache_writes, 0);
	symbolizer_free(s);

	unlink(cache);
	rmdir(dir);
	unlink(path);
}

/*
 * A BPF frame the cache's table cannot name has kallsyms read whole on the reader's thread, not the
 * caller's: a caller past its deadline (the daemon's loop at the end of its turn's budget) is answered
 * from the table it has at once, counted; a later lookup takes the read in once it is done, and one
 * without a deadline waits for it.
 */
static void test_read_on_thread(void **state)
{
	char dir[] = "/tmp/test-sym-kernel-cache-XXXXXX", cache[64];
	const struct symbolizer_stats *st;
	struct symbolizer_config config = { .kallsyms_path = path, .kallsyms_cache_path = cache,
					    .no_debuginfod = true };
	struct symbolizer *s;
	struct sym_frame f;

	(void)state;
	cache_files(dir, cache, sizeof(cache));
	write_kallsyms_sized("bpf_prog_1234_saved", 200000);
	s = symbolizer_new(&config);
	assert_string_equal(kernel_name(s, 0xffffffff81000150ULL, &f), "schedule"); /* saves the cache */
	symbolizer_free(s);

	write_kallsyms_sized("bpf_prog_5678_now", 200000);
	s = symbolizer_new(&config);
	st = symbolizer_stats(s);
	assert_string_equal(kernel_name(s, 0xffffffff81000150ULL, &f), "schedule");
	assert_int_equal(st->kallsyms_cache_hits, 1);
	/* Past its deadline: not named now, the read runs on. */
	symbolizer_set_open_deadline(s, 1);
	assert_int_equal(symbolizer_kernel(s, 0xffffffffa0001010ULL, &f), -ENOENT);
	assert_int_equal(st->kallsyms_lookups_before_read, 1);
	assert_int_equal(st->kallsyms_full_reads, 0);
	assert_string_equal(kernel_name(s, 0xffffffff81000150ULL, &f), "schedule"); /* the table held */
	/* No deadline: waited for, and named with today's program. */
	symbolizer_set_open_deadline(s, 0);
	assert_string_equal(kernel_name(s, 0xffffffffa0001010ULL, &f), "bpf_prog_5678_now");
	assert_int_equal(st->kallsyms_full_reads, 1);
	assert_int_equal(st->kallsyms_lookups_before_read, 1);
	assert_true(st->kallsyms_thread_ns > 0);
	symbolizer_free(s);

	/* A read still running at symbolizer_free() is waited for and freed (ASan: no leak). */
	s = symbolizer_new(&config);
	assert_string_equal(kernel_name(s, 0xffffffff81000150ULL, &f), "schedule");
	symbolizer_set_open_deadline(s, 1);
	symbolizer_kernel(s, 0xffffffffa0001010ULL, &f);
	symbolizer_free(s);

	unlink(cache);
	rmdir(dir);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lazy_and_refresh),
		cmocka_unit_test(test_load_ahead),
		cmocka_unit_test(test_never_read_without_kernel_frames),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_read_on_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
