// SPDX-License-Identifier: Apache-2.0
/*
 * An evicted module keeps its file open for the mappings still pointing at it (issue 30): a child
 * maps two programs (argv[1], argv[2]), the symbolizer (room for one module) opens the first, then
 * the second evicts it; the child exits and is reaped, so neither /proc/PID/map_files nor
 * /proc/PID/root reaches the first program any more, and its address is still named, opened again
 * through the kept file. Forgetting the process closes that file; nothing is left open. A lookup
 * whose open is deferred holds the file the same way.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolizer.h"

static const char *programs[2];

/* Map a program whole (read and execute): an address inside its executable segment. */
static uint64_t map_program(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	const unsigned char *base;
	const Elf64_Ehdr *eh;

	if (fd < 0 || fstat(fd, &st))
		_exit(3);
	base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		_exit(3);
	eh = (const Elf64_Ehdr *)base;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff + i * eh->e_phentsize);

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && ph->p_filesz > 64 &&
		    ph->p_offset + 64 < (uint64_t)st.st_size)
			return (uint64_t)(uintptr_t)base + ph->p_offset + 32;
	}
	_exit(3);
}

/* A child that maps both programs, tells their addresses, and waits until its pipe closes. */
static pid_t start_child(uint64_t text[2], int *release)
{
	int up[2], down[2];
	pid_t pid;

	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint64_t mine[2] = { map_program(programs[0]), map_program(programs[1]) };
		char c;

		close(up[0]);
		close(down[1]);
		if (write(up[1], mine, sizeof(mine)) != (ssize_t)sizeof(mine))
			_exit(4);
		while (read(down[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	assert_int_equal(read(up[0], text, 2 * sizeof(uint64_t)), (ssize_t)(2 * sizeof(uint64_t)));
	close(up[0]);
	*release = down[1];
	return pid;
}

static unsigned open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* A symbolizer with no debug directories nor debuginfod, at most max_modules modules (0: the default). */
static struct symbolizer *quiet_symbolizer(size_t max_modules)
{
	return symbolizer_new(&(struct symbolizer_config){
		.max_modules = max_modules, .no_debuginfod = true,
		.debug_dirs = (const char *const[]){ "/nonexistent", NULL },
	});
}

static void test_exited_process_named_after_eviction(void **state)
{
	struct symbolizer *s;
	const struct symbolizer_stats *st;
	struct sym_frame f;
	uint64_t text[2];
	char name[256];
	unsigned fds = open_fds();
	int release, status;
	pid_t pid;

	(void)state;
	s = quiet_symbolizer(1);
	assert_non_null(s);
	pid = start_child(text, &release);
	assert_int_equal(symbolizer_prepare_instance(s, pid, 1, 0), 0);
	assert_int_equal(symbolizer_user_instance(s, pid, 1, text[0], &f), 0);
	assert_true(f.nlines > 0 && f.lines[0].function);
	snprintf(name, sizeof(name), "%s", f.lines[0].function);
	/* The second program's module takes the only place: the first is evicted, its file kept. */
	assert_int_equal(symbolizer_user_instance(s, pid, 1, text[1], &f), 0);
	assert_true(f.nlines > 0);
	st = symbolizer_stats(s);
	assert_int_equal(st->modules_evicted, 1);
	assert_int_equal(st->files_kept, 1);

	/* The process exits before its samples are symbolized. */
	close(release);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	symbolizer_retire_process(s, pid);
	assert_int_equal(symbolizer_user_instance(s, pid, 1, text[0], &f), 0);
	assert_true(f.nlines > 0 && f.lines[0].function);
	assert_string_equal(f.lines[0].function, name);
	st = symbolizer_stats(s);
	assert_int_equal(st->modules_reopened_kept, 1);
	assert_int_equal(st->files_kept, 1); /* now the second program's, evicted in turn */
	assert_int_equal(st->files_kept_dropped, 0);
	/* And back again: the second program too, through its kept file. */
	assert_int_equal(symbolizer_user_instance(s, pid, 1, text[1], &f), 0);
	assert_true(f.nlines > 0);
	assert_int_equal(symbolizer_stats(s)->modules_reopened_kept, 2);

	/* Its samples built: forgetting the process closes the kept file. */
	symbolizer_forget_instance(s, pid, 1);
	assert_int_equal(symbolizer_stats(s)->files_kept, 0);
	symbolizer_free(s);
	assert_int_equal(open_fds(), fds);
}

/* A lookup whose open is deferred (deadline 1: the daemon sheds work) holds the mapping's file: the
 * process exits meanwhile, and the next lookup still opens it. */
static void test_deferred_open_holds_file(void **state)
{
	struct symbolizer *s;
	struct sym_frame f;
	uint64_t text[2];
	unsigned fds = open_fds();
	int release, status;
	pid_t pid;

	(void)state;
	s = quiet_symbolizer(0);
	assert_non_null(s);
	pid = start_child(text, &release);
	assert_int_equal(symbolizer_prepare_instance(s, pid, 1, 0), 0);
	symbolizer_set_open_deadline(s, 1);
	assert_int_equal(symbolizer_user_instance(s, pid, 1, text[0], &f), 0);
	assert_true(f.has_mapping && f.nlines == 0);
	assert_int_equal(symbolizer_user_instance(s, pid, 1, text[0], &f), 0); /* held once */
	assert_int_equal(symbolizer_stats(s)->module_opens_deferred, 2);
	assert_int_equal(symbolizer_stats(s)->files_kept, 1);
	close(release);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	symbolizer_retire_process(s, pid);
	symbolizer_set_open_deadline(s, 0);
	assert_int_equal(symbolizer_user_instance(s, pid, 1, text[0], &f), 0);
	assert_true(f.nlines > 0 && f.lines[0].function);
	assert_int_equal(symbolizer_stats(s)->modules_reopened_kept, 1);
	assert_int_equal(symbolizer_stats(s)->files_kept, 0); /* the module has it now */
	symbolizer_free(s);
	assert_int_equal(open_fds(), fds);
}

/* A module no mapping points at any more is evicted without keeping anything. */
static void test_unreferenced_not_kept(void **state)
{
	struct symbolizer *s;
	struct sym_frame f;
	uint64_t text[2];
	int release, status;
	pid_t pid;

	(void)state;
	s = quiet_symbolizer(1);
	assert_non_null(s);
	pid = start_child(text, &release);
	assert_int_equal(symbolizer_prepare_instance(s, pid, 1, 0), 0);
	assert_int_equal(symbolizer_user_instance(s, pid, 1, text[0], &f), 0);
	symbolizer_forget_instance(s, pid, 1);
	assert_int_equal(symbolizer_prepare_instance(s, pid, 2, 0), 0);
	assert_int_equal(symbolizer_user_instance(s, pid, 2, text[1], &f), 0);
	assert_int_equal(symbolizer_stats(s)->modules_evicted, 1);
	assert_int_equal(symbolizer_stats(s)->files_kept, 0);
	close(release);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	symbolizer_free(s);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exited_process_named_after_eviction),
		cmocka_unit_test(test_deferred_open_holds_file),
		cmocka_unit_test(test_unreferenced_not_kept),
	};

	if (argc < 3) {
		fprintf(stderr, "usage: %s PROGRAM PROGRAM\n", argv[0]);
		return 2;
	}
	programs[0] = argv[1];
	programs[1] = argv[2];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
