// SPDX-License-Identifier: Apache-2.0
/*
 * symtool: drives the symbolizer library for the integration tests and benchmarks. Reads one
 * command per line on stdin and answers each with lines ending in a line holding ".":
 *   user PID ADDR | kernel ADDR | elf PATH VADDR | elfs PATH VADDR... | demangle NAME | forget PID | maintain | stats
 * Options: --debug-dir DIR (repeatable), --no-map-files, --max-modules N, --max-bytes N,
 *          --kallsyms FILE, --bad-retry-ms MS, --debuginfod-timeout-ms MS,
 *          --debuginfod-cache-bytes N, --debuginfod-negative-ms MS
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demangle.h"
#include "elf_module.h"
#include "symbolizer.h"

static const char *str(const char *s)
{
	return s ? s : "";
}

static void print_frame(int rc, const struct sym_frame *f)
{
	printf("frame\trc=%d\tkind=%s\tmapping=%d\tpath=%s\tbuild_id=%s\thtlhash=%s\tfile_address=0x%" PRIx64
	       "\tmodule=%s\tnlines=%u\tgo_build_id=%s\n",
	       rc, f->kind == SYM_FRAME_KERNEL ? "kernel" : f->kind == SYM_FRAME_GO ? "go" : "native", f->has_mapping,
	       f->has_mapping ? str(f->mapping.path) : "", f->has_mapping ? str(f->mapping.build_id) : "",
	       f->has_mapping ? str(f->mapping.htlhash) : "", f->file_address, str(f->module), f->nlines,
	       f->has_mapping ? str(f->mapping.go_build_id) : "");
	for (unsigned i = 0; i < f->nlines; i++)
		printf("line\tfunction=%s\tsystem_name=%s\tfile=%s\tline=%u\tcolumn=%u\n", str(f->lines[i].function),
		       str(f->lines[i].system_name), str(f->lines[i].file), f->lines[i].line, f->lines[i].column);
}

static void print_stats(const struct symbolizer_stats *s)
{
	printf("stats\tlookups=%" PRIu64 "\tsymbolized=%" PRIu64 "\tno_mapping=%" PRIu64 "\tmodule_open_failed=%" PRIu64
	       "\tmodules_loaded=%" PRIu64 "\tmodules_evicted=%" PRIu64 "\tmodule_cache_hits=%" PRIu64
	       "\tmodule_cache_misses=%" PRIu64 "\tmodules_shared_by_build_id=%" PRIu64 "\tmodules_bad=%" PRIu64
	       "\tmodules_cached=%" PRIu64 "\tmodule_bytes=%" PRIu64 "\tjit_symbolized=%" PRIu64
	       "\tperf_map_loads=%" PRIu64 "\tkallsyms_reloads=%" PRIu64 "\tkallsyms_hidden=%d\tmodule_cache_full=%" PRIu64 "\tmodule_bytes_over=%" PRIu64 "\n",
	       s->lookups, s->symbolized, s->no_mapping, s->module_open_failed, s->modules_loaded, s->modules_evicted,
	       s->module_cache_hits, s->module_cache_misses, s->modules_shared_by_build_id, s->modules_bad,
	       s->modules_cached, s->module_bytes, s->jit_symbolized, s->perf_map_loads, s->kallsyms_reloads,
	       s->kallsyms_hidden, s->module_cache_full, s->module_bytes_over);
	printf("stats2\tinline_truncated=%" PRIu64 "\tdie_bound_hit=%" PRIu64 "\tlines_by_libdw=%" PRIu64
	       "\tdebuginfod_reloaded=%" PRIu64 "\tdi_requests=%" PRIu64 "\tdi_found=%" PRIu64 "\tdi_not_found=%" PRIu64
	       "\tdi_failed=%" PRIu64 "\tdi_timeouts=%" PRIu64 "\tdi_too_big=%" PRIu64 "\tdi_negative_hits=%" PRIu64
	       "\tdi_queue_full=%" PRIu64 "\tdi_rejected=%" PRIu64 "\tdi_cache_evicted=%" PRIu64
	       "\tdi_cache_bytes=%" PRIu64 "\tdi_cache_files=%" PRIu64 "\tdebuglink_too_big=%" PRIu64
	       "\tmodules_too_big=%" PRIu64 "\n",
	       s->inline_truncated, s->die_bound_hit, s->lines_by_libdw, s->debuginfod_reloaded, s->debuginfod.requests,
	       s->debuginfod.found, s->debuginfod.not_found, s->debuginfod.failed, s->debuginfod.timeouts,
	       s->debuginfod.too_big, s->debuginfod.negative_hits, s->debuginfod.queue_full, s->debuginfod.rejected,
	       s->debuginfod.cache_evicted, s->debuginfod.cache_bytes, s->debuginfod.cache_files,
	       s->debuglink_too_big, s->modules_too_big);
	printf("stats3\tmodules_share_refused=%" PRIu64 "\tperf_map_bytes=%" PRIu64 "\tperf_maps_refused=%" PRIu64
	       "\tperf_maps_too_big=%" PRIu64 "\tperf_maps_evicted=%" PRIu64 "\tgo_tables=%" PRIu64
	       "\tgo_tables_refused=%" PRIu64 "\tgo_frames=%" PRIu64 "\tgo_top_frames=%" PRIu64 "\tgo_stack_switches=%" PRIu64 "\tgo_sp_frames=%" PRIu64 "\n",
	       s->modules_share_refused, s->perf_map_bytes, s->perf_maps_refused, s->perf_maps_too_big,
	       s->perf_maps_evicted, s->go_tables, s->go_tables_refused, s->go_frames, s->go_top_frames,
	       s->go_stack_switches, s->go_sp_frames);
}

static void elf_command(const char *path, const uint64_t *vaddrs, size_t n, const char *const *dirs, size_t max_bytes)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct elf_module *m;
	struct sym_frame f = { 0 };

	if (fd < 0) {
		printf("error\t%s\n", strerror(errno));
		return;
	}
	m = elf_module_open(fd, &(struct elf_module_options){
		.root_fd = -1, .path = path, .debug_dirs = dirs, .max_bytes = max_bytes,
	});
	if (!m) {
		printf("error\t%s\n", strerror(errno));
		return;
	}
	printf("module\tbuild_id=%s\thtlhash=%s\tdwarf=%d\tbytes=%zu\tgo=%d\tgo_build_id=%s\n",
	       str(elf_module_build_id(m)), str(elf_module_htlhash(m)), elf_module_has_dwarf(m), elf_module_bytes(m),
	       elf_module_is_go(m), str(elf_module_go_build_id(m)));
	for (size_t i = 0; i < n; i++) {
		f = (struct sym_frame){ .file_address = vaddrs[i] };
		elf_module_symbolize(m, vaddrs[i], &f);
		print_frame(0, &f);
		printf("go_top\t%d\n", elf_module_go_top_frame(m, vaddrs[i]));
	}
	printf("counters\tdie_bound_hit=%" PRIu64 "\tinline_truncated=%" PRIu64 "\tinflate_refused=%" PRIu64
	       "\tgo_refused=%" PRIu64 "\tgo_lookups=%" PRIu64 "\n",
	       elf_module_counters(m)->die_bound_hit, elf_module_counters(m)->inline_truncated,
	       elf_module_counters(m)->inflate_refused, elf_module_counters(m)->go_refused,
	       elf_module_counters(m)->go_lookups);
	elf_module_free(m);
}

int main(int argc, char **argv)
{
	struct symbolizer_config config = { 0 };
	const char *dirs[17] = { 0 };
	size_t ndirs = 0;
	char line[8192];
	struct symbolizer *s;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--debug-dir") && i + 1 < argc && ndirs < 16)
			dirs[ndirs++] = argv[++i];
		else if (!strcmp(argv[i], "--no-map-files"))
			config.no_map_files = true;
		else if (!strcmp(argv[i], "--max-modules") && i + 1 < argc)
			config.max_modules = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc)
			config.max_module_bytes = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--kallsyms") && i + 1 < argc)
			config.kallsyms_path = argv[++i];
		else if (!strcmp(argv[i], "--debuginfod-timeout-ms") && i + 1 < argc)
			config.debuginfod_timeout_ms = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--debuginfod-cache-bytes") && i + 1 < argc)
			config.debuginfod_cache_bytes = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--debuginfod-negative-ms") && i + 1 < argc)
			config.debuginfod_negative_ttl_ms = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--bad-retry-ms") && i + 1 < argc)
			config.bad_file_retry_ns = strtoull(argv[++i], NULL, 0) * 1000000ULL;
		else {
			fprintf(stderr, "symtool: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (ndirs)
		config.debug_dirs = dirs;
	s = symbolizer_new(&config);
	if (!s) {
		fprintf(stderr, "symtool: out of memory\n");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		char cmd[32] = "", arg[4096] = "";
		unsigned long long a = 0, b = 0;
		struct sym_frame f;
		int rc;

		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%31s", cmd) != 1)
			continue;
		if (!strcmp(cmd, "user") && sscanf(line, "%*s %llu %llx", &a, &b) == 2) {
			rc = symbolizer_user(s, (pid_t)a, b, &f);
			print_frame(rc, &f);
		} else if (!strcmp(cmd, "kernel") && sscanf(line, "%*s %llx", &a) == 1) {
			rc = symbolizer_kernel(s, a, &f);
			print_frame(rc, &f);
		} else if (!strcmp(cmd, "elf") && sscanf(line, "%*s %4095s %llx", arg, &a) == 2) {
			uint64_t v = a;

			elf_command(arg, &v, 1, ndirs ? dirs : NULL, config.max_module_bytes);
		} else if (!strcmp(cmd, "elfs") && sscanf(line, "%*s %4095s", arg) == 1) {
			/* elfs PATH ADDR...: one module, many addresses */
			static uint64_t v[1024];
			size_t nv = 0;
			char *p = line + strspn(line, " ") + 4, *end;

			p += strspn(p, " ");
			p += strcspn(p, " ");
			while (nv < 1024 && (a = strtoull(p, &end, 16), end != p)) {
				v[nv++] = a;
				p = end;
			}
			elf_command(arg, v, nv, ndirs ? dirs : NULL, config.max_module_bytes);
		} else if (!strcmp(cmd, "demangle") && sscanf(line, "%*s %4095s", arg) == 1) {
			char *d = sym_demangle(arg);

			printf("demangled\t%s\n", d ? d : "");
			free(d);
		} else if (!strcmp(cmd, "forget") && sscanf(line, "%*s %llu", &a) == 1) {
			symbolizer_forget_process(s, (pid_t)a);
		} else if (!strcmp(cmd, "prepare") && sscanf(line, "%*s %llu", &a) == 1) {
			printf("prepared\t%d\n", symbolizer_prepare_process(s, (pid_t)a));
		} else if (!strcmp(cmd, "maintain")) {
			symbolizer_maintain(s);
		} else if (!strcmp(cmd, "stats")) {
			print_stats(symbolizer_stats(s));
		} else {
			printf("error\tbad command\n");
		}
		printf(".\n");
	}
	symbolizer_free(s);
	return 0;
}
