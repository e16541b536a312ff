// SPDX-License-Identifier: Apache-2.0
/*
 * The module cache's admission (issue 27): the history's decisions on their own (module_history.c,
 * times passed in), then the symbolizer on three small ELF programs with DWARF mapped into this
 * process (argv[1..3], the first with compressed debug sections): a module over its share of the cache gets the symbols tier and one notice;
 * a working set larger than the cache is not opened again and again (the module evicted under
 * pressure comes back at the symbols tier, and after that only where it fits); the open deadline defers opens and keeps mappings.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "module_history.h"
#include "symbolizer.h"

#define SECOND 1000000000ULL
#define MIB (1ULL << 20)

static struct module_key key_of(unsigned n)
{
	struct module_key k = { .build_id_len = 20 };

	memcpy(k.build_id, &n, sizeof(n));
	return k;
}

static void test_new_module_is_full(void **state)
{
	static struct module_history h;
	struct module_key k = key_of(1);
	enum module_tier_reason why;

	(void)state;
	assert_int_equal(module_history_decide(NULL, 5, &why), MODULE_TIER_FULL);
	assert_null(module_history_get(&h, &k, 5, false));
	assert_int_equal(module_history_decide(module_history_get(&h, &k, 5, true), 5, &why), MODULE_TIER_FULL);
	assert_int_equal(why, MODULE_REASON_NONE);
	assert_non_null(module_history_get(&h, &k, 6, false));
}

/* Evicted to make room after a costly open: symbols tier until the cooldown ends, then full again. */
static void test_thrash_cooldown(void **state)
{
	static struct module_history h;
	struct module_key k = key_of(2);
	struct module_history_entry *e = module_history_get(&h, &k, SECOND, true);
	enum module_tier_reason why;

	(void)state;
	module_history_opened(e, MODULE_TIER_FULL, MODULE_REASON_NONE, 12 * MIB, 30000000, SECOND);
	module_history_evicted(e, 2 * SECOND, MIB);
	assert_int_equal(e->evictions, 1);
	assert_int_equal(module_history_decide(e, 3 * SECOND, &why), MODULE_TIER_SYMBOLS);
	assert_int_equal(why, MODULE_REASON_THRASH);
	/* Its symbols-tier opens and evictions do not move the cooldown. */
	module_history_opened(e, MODULE_TIER_SYMBOLS, MODULE_REASON_THRASH, MIB, 1000000, 3 * SECOND);
	module_history_evicted(e, 4 * SECOND, MIB);
	assert_int_equal(e->evictions, 1);
	assert_int_equal(module_history_decide(e, 2 * SECOND + MODULE_HISTORY_COOLDOWN_NS - 1, &why),
			 MODULE_TIER_SYMBOLS);
	assert_int_equal(module_history_decide(e, 2 * SECOND + MODULE_HISTORY_COOLDOWN_NS, &why), MODULE_TIER_FULL);
	assert_int_equal(e->opens, 2);
}

/* A small module that opened fast may come back in full: its reopen costs little. */
static void test_cheap_module_not_demoted(void **state)
{
	static struct module_history h;
	struct module_key k = key_of(3);
	struct module_history_entry *e = module_history_get(&h, &k, SECOND, true);
	enum module_tier_reason why;

	(void)state;
	module_history_opened(e, MODULE_TIER_FULL, MODULE_REASON_NONE, 100 << 10, 1000000, SECOND);
	module_history_evicted(e, 2 * SECOND, MIB);
	assert_int_equal(module_history_decide(e, 2 * SECOND, &why), MODULE_TIER_FULL);
	/* The same module, slow to open: demoted at its eviction. */
	module_history_opened(e, MODULE_TIER_FULL, MODULE_REASON_NONE, 100 << 10, MODULE_HISTORY_CHEAP_OPEN_NS, SECOND);
	module_history_evicted(e, 3 * SECOND, MIB);
	assert_int_equal(module_history_decide(e, 3 * SECOND, &why), MODULE_TIER_SYMBOLS);
	assert_int_equal(why, MODULE_REASON_THRASH);
}

/* Too big: from the open's refusal, or grown past the share while cached; it stays. */
static void test_too_big_sticks(void **state)
{
	static struct module_history h;
	struct module_key a = key_of(4), b = key_of(5);
	struct module_history_entry *e = module_history_get(&h, &a, SECOND, true);
	enum module_tier_reason why;

	(void)state;
	module_history_opened(e, MODULE_TIER_SYMBOLS, MODULE_REASON_TOO_BIG, MIB, 1000, SECOND);
	module_history_evicted(e, 2 * SECOND, MIB);
	assert_int_equal(module_history_decide(e, 100 * MODULE_HISTORY_COOLDOWN_NS, &why), MODULE_TIER_SYMBOLS);
	assert_int_equal(why, MODULE_REASON_TOO_BIG);

	e = module_history_get(&h, &b, SECOND, true);
	module_history_opened(e, MODULE_TIER_FULL, MODULE_REASON_NONE, 3 * MIB, 1000, SECOND);
	module_history_measured(e, 7 * MIB, 8 * MIB);
	assert_int_equal(module_history_decide(e, SECOND, &why), MODULE_TIER_FULL);
	module_history_measured(e, 9 * MIB, 8 * MIB);
	assert_int_equal(module_history_decide(e, SECOND, &why), MODULE_TIER_SYMBOLS);
	assert_int_equal(why, MODULE_REASON_TOO_BIG);
	assert_int_equal(e->peak_bytes, 9 * MIB);
	/* A later thrash does not replace the stronger reason. */
	module_history_evicted(e, 2 * SECOND, MIB);
	assert_int_equal(module_history_decide(e, 10 * MODULE_HISTORY_COOLDOWN_NS, &why), MODULE_TIER_SYMBOLS);
}

static void test_slow_open(void **state)
{
	static struct module_history h;
	struct module_key k = key_of(6);
	struct module_history_entry *e = module_history_get(&h, &k, SECOND, true);
	enum module_tier_reason why;

	(void)state;
	module_history_opened(e, MODULE_TIER_FULL, MODULE_REASON_NONE, MIB, MODULE_HISTORY_SLOW_OPEN_NS + 1, SECOND);
	assert_int_equal(module_history_decide(e, 2 * SECOND, &why), MODULE_TIER_SYMBOLS);
	assert_int_equal(why, MODULE_REASON_SLOW);
	assert_int_equal(module_history_decide(e, SECOND + MODULE_HISTORY_COOLDOWN_NS, &why), MODULE_TIER_FULL);
}

/* Bounded: more keys than slots replace the least recently touched, counted; a build id and a file
 * identity are different keys. */
static void test_bounded(void **state)
{
	static struct module_history h;
	struct module_key file = { .dev = 8, .inode = 99 }, k;
	unsigned found = 0;

	(void)state;
	for (unsigned i = 0; i < 4 * MODULE_HISTORY_SLOTS; i++) {
		k = key_of(100 + i);
		assert_non_null(module_history_get(&h, &k, i + 1, true));
	}
	assert_true(h.dropped >= 3 * MODULE_HISTORY_SLOTS);
	for (unsigned i = 3 * MODULE_HISTORY_SLOTS; i < 4 * MODULE_HISTORY_SLOTS; i++) {
		k = key_of(100 + i);
		found += module_history_get(&h, &k, 0, false) != NULL;
	}
	/* The newest keys are mostly kept (a set may hold more than its share of them). */
	assert_true(found >= MODULE_HISTORY_SLOTS / 2);
	assert_null(module_history_get(&h, &file, 0, false));
	assert_non_null(module_history_get(&h, &file, 1, true));
	file.inode = 100;
	assert_null(module_history_get(&h, &file, 0, false));
}

/* ---- the symbolizer on mapped programs ---- */

static const char *programs[3];
static uint64_t text[3]; /* an address inside each program's executable segment, as mapped here */

/* Map a program whole (read and execute, offset 0): the symbolizer sees an executable file mapping. */
static uint64_t map_program(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	const unsigned char *base;
	const Elf64_Ehdr *eh;

	assert_true(fd >= 0 && fstat(fd, &st) == 0);
	base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(base != MAP_FAILED);
	close(fd);
	eh = (const Elf64_Ehdr *)base;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff + i * eh->e_phentsize);

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && ph->p_filesz > 64 &&
		    ph->p_offset + 64 < (uint64_t)st.st_size)
			return (uint64_t)(uintptr_t)base + ph->p_offset + 32;
	}
	fail_msg("%s has no executable segment", path);
	return 0;
}

static struct symbolizer *new_symbolizer(size_t bytes)
{
	struct symbolizer *s = symbolizer_new(&(struct symbolizer_config){
		.max_module_bytes = bytes, .no_debuginfod = true, .debug_dirs = (const char *const[]){ "/nonexistent", NULL },
	});

	assert_non_null(s);
	return s;
}

static unsigned count_notices(struct symbolizer *s, const char *why_part, const char **path)
{
	struct sym_notice n;
	unsigned count = 0;

	while (symbolizer_next_notice(s, &n)) {
		print_message("notice: %s %s: %s (%llu bytes, share %llu)\n", n.path, n.build_id, n.why,
			      (unsigned long long)n.bytes, (unsigned long long)n.share);
		if (strstr(n.why, why_part)) {
			count++;
			if (path)
				*path = strstr(n.path, programs[0]) ? programs[0] : n.path;
		}
	}
	return count;
}

/* What each program's module accounts for at the full tier (a cache large enough for all). */
static void full_costs(uint64_t cost[3])
{
	struct symbolizer *s = new_symbolizer(1ULL << 30);
	struct sym_frame f;
	uint64_t before = 0;

	for (int i = 0; i < 3; i++) {
		assert_int_equal(symbolizer_user(s, getpid(), text[i], &f), 0);
		assert_true(f.has_mapping);
		cost[i] = symbolizer_stats(s)->module_bytes - before;
		before = symbolizer_stats(s)->module_bytes;
	}
	assert_int_equal(symbolizer_stats(s)->modules_full, 3);
	symbolizer_free(s);
}

/* A module over its share (half the cache) is served by the symbols tier, told once. */
static void test_too_big_served_by_symbols(void **state)
{
	struct symbolizer *s;
	struct sym_frame f;
	const char *path = NULL;

	struct stat st;

	(void)state;
	/* Its share (half the cache) holds the file but not its inflated DWARF (programs[0] is built
	 * with compressed debug sections). */
	assert_int_equal(stat(programs[0], &st), 0);
	s = new_symbolizer(2 * (size_t)st.st_size);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(symbolizer_user(s, getpid(), text[0], &f), 0);
		assert_true(f.has_mapping);
		assert_non_null(f.mapping.build_id); /* the backend can still symbolize it */
	}
	assert_int_equal(symbolizer_stats(s)->modules_full, 0);
	assert_int_equal(symbolizer_stats(s)->modules_symbols_tier, 1);
	assert_int_equal(symbolizer_stats(s)->modules_tier_too_big, 1);
	assert_int_equal(count_notices(s, "larger than its share", &path), 1);
	assert_ptr_equal(path, programs[0]);
	assert_int_equal(count_notices(s, "", NULL), 0); /* once */
	symbolizer_free(s);
}

/*
 * Three modules that each fit in half the cache but not all together: round after round, the one
 * evicted to make room comes back at the symbols tier, so the file is not inflated again each time
 * (before: every round opened every module again).
 */
static void test_working_set_over_cache(void **state)
{
	uint64_t cost[3], biggest = 0;
	struct symbolizer *s;
	struct sym_frame f;
	size_t cache;
	const struct symbolizer_stats *st;

	(void)state;
	full_costs(cost);
	for (int i = 0; i < 3; i++)
		biggest = cost[i] > biggest ? cost[i] : biggest;
	cache = (size_t)(2 * biggest);
	print_message("full costs %llu %llu %llu, cache %zu\n", (unsigned long long)cost[0],
		      (unsigned long long)cost[1], (unsigned long long)cost[2], cache);
	assert_true(cost[0] + cost[1] + cost[2] > cache); /* the test's premise: they do not fit together */
	s = new_symbolizer(cache);
	for (int round = 0; round < 10; round++)
		for (int i = 0; i < 3; i++) {
			assert_int_equal(symbolizer_user(s, getpid(), text[i], &f), 0);
			assert_true(f.has_mapping);
		}
	st = symbolizer_stats(s);
	print_message("opens: %llu full, %llu symbols (thrash %llu), %llu not admitted, %llu misses, %llu pressure "
		      "evictions\n", (unsigned long long)st->modules_full, (unsigned long long)st->modules_symbols_tier,
		      (unsigned long long)st->modules_tier_thrash, (unsigned long long)st->modules_not_admitted,
		      (unsigned long long)st->module_cache_misses, (unsigned long long)st->module_pressure_evictions);
	/* Each module opened at most once in full and once at the symbols tier; past that, one that
	 * does not fit is refused (and looks again a second later), never opened at another's expense. */
	assert_int_equal(st->modules_full, 3);
	assert_true(st->modules_tier_thrash >= 1 && st->modules_symbols_tier <= 3);
	assert_int_equal(st->module_cache_misses, st->modules_full + st->modules_symbols_tier + st->modules_not_admitted);
	assert_true(st->modules_not_admitted <= 3 * 10);
	assert_true(count_notices(s, "needed again soon", NULL) >= 1);
	assert_true(st->module_open_ns_max > 0 && st->module_open_ns_total >= st->module_open_ns_max);
	assert_true(st->module_open_bytes_max > 0 && st->module_open_bytes_max <= cache);
	symbolizer_free(s);
}

/* Past the open deadline nothing is opened: frames keep their mapping; lifted, the module opens. */
static void test_open_deadline(void **state)
{
	struct symbolizer *s = new_symbolizer(1ULL << 30);
	struct sym_frame f;

	(void)state;
	symbolizer_set_open_deadline(s, 1);
	assert_int_equal(symbolizer_user(s, getpid(), text[1], &f), 0);
	assert_true(f.has_mapping);
	assert_null(f.mapping.build_id);
	assert_int_equal(f.nlines, 0);
	assert_int_equal(symbolizer_stats(s)->module_opens_deferred, 1);
	assert_int_equal(symbolizer_stats(s)->module_cache_misses, 0);
	symbolizer_set_open_deadline(s, 0);
	assert_int_equal(symbolizer_user(s, getpid(), text[1], &f), 0);
	assert_non_null(f.mapping.build_id);
	assert_int_equal(symbolizer_stats(s)->modules_full, 1);
	/* A cached module is served past the deadline. */
	symbolizer_set_open_deadline(s, 1);
	assert_int_equal(symbolizer_user(s, getpid(), text[1], &f), 0);
	assert_non_null(f.mapping.build_id);
	assert_int_equal(symbolizer_stats(s)->module_opens_deferred, 1);
	symbolizer_free(s);
}

/* The opener's thread builds a module's indexes with its open (issue 27): the caller's lookups
 * that follow, on its event loop in the daemon, build none of them themselves. */
static void test_opener_builds_indexes(void **state)
{
	struct symbolizer *s = new_symbolizer(1ULL << 30);
	const struct symbolizer_stats *st;
	struct timespec now;
	struct sym_frame f;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* A deadline far enough to wait for each open: every one runs in the opener's thread. */
	symbolizer_set_open_deadline(s, (uint64_t)now.tv_sec * SECOND + (uint64_t)now.tv_nsec + 60 * SECOND);
	for (int i = 0; i < 3; i++) {
		for (uint64_t at = 0; at < 64; at += 16) {
			assert_int_equal(symbolizer_user(s, getpid(), text[i] + at, &f), 0);
			assert_non_null(f.mapping.build_id);
		}
	}
	st = symbolizer_stats(s);
	assert_int_equal(st->modules_full, 3);
	assert_int_equal(st->module_opens_deferred, 0);
	assert_true(st->module_index_ns_total > 0 && st->module_index_ns_total <= st->module_open_ns_total);
	assert_int_equal(st->module_index_builds_at_lookup, 0);
	symbolizer_free(s);
}

/* The largest compile units' first-lookup work (their function index, their line program reader) is
 * the open's, on the opener's thread: the heavy program's one CU (486 KiB of .debug_info) costs its
 * lookups nothing more, and they still find its lines. */
static const char *heavy;
static uint64_t heavy_text;

static void test_open_builds_large_cus(void **state)
{
	struct symbolizer *s = new_symbolizer(1ULL << 30);
	const struct symbolizer_stats *st;
	struct timespec now;
	struct sym_frame f;
	unsigned lined = 0;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &now);
	symbolizer_set_open_deadline(s, (uint64_t)now.tv_sec * SECOND + (uint64_t)now.tv_nsec + 60 * SECOND);
	for (uint64_t at = 0; at < 0x50000; at += 0x800) {
		assert_int_equal(symbolizer_user(s, getpid(), heavy_text + at, &f), 0);
		lined += f.nlines && f.lines[0].line && f.lines[0].file;
	}
	st = symbolizer_stats(s);
	assert_int_equal(st->modules_full, 1);
	assert_int_equal(st->cus_prebuilt, 1);
	assert_int_equal(st->cu_builds, 0);
	assert_true(lined > 100);
	symbolizer_free(s);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest history[] = {
		cmocka_unit_test(test_new_module_is_full),
		cmocka_unit_test(test_thrash_cooldown),
		cmocka_unit_test(test_cheap_module_not_demoted),
		cmocka_unit_test(test_too_big_sticks),
		cmocka_unit_test(test_slow_open),
		cmocka_unit_test(test_bounded),
	};
	const struct CMUnitTest cache[] = {
		cmocka_unit_test(test_too_big_served_by_symbols),
		cmocka_unit_test(test_working_set_over_cache),
		cmocka_unit_test(test_open_deadline),
		cmocka_unit_test(test_opener_builds_indexes),
		cmocka_unit_test(test_open_builds_large_cus),
	};
	int r;

	if (argc != 5) {
		fprintf(stderr, "usage: %s PROGRAM PROGRAM PROGRAM HEAVY (ELF files with DWARF, the first compressed; "
			"HEAVY with a compile unit over 192 KiB)\n", argv[0]);
		return 2;
	}
	r = cmocka_run_group_tests_name("module history", history, NULL, NULL);
	/* Mapped before any symbolizer reads this process's maps. */
	for (int i = 0; i < 3; i++) {
		programs[i] = argv[i + 1];
		text[i] = map_program(argv[i + 1]);
	}
	heavy = argv[4];
	heavy_text = map_program(heavy);
	return r | cmocka_run_group_tests_name("module cache admission", cache, NULL, NULL);
}
