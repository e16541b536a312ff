// SPDX-License-Identifier: Apache-2.0
/*
 * CPU cost of symbolizer_unwind() on this program's own stack, captured 30 frames deep in a chain
 * built with -O2 -fomit-frame-pointer (like a sample's registers and 16 KiB window):
 *   - warm: rules found in the rule cache (the steady state of a profiler);
 *   - cold: every frame's rule looked up with dwarf_cfi_addrframe and compiled, as without the cache
 *     (the modules and their CFI already loaded);
 *   - libdwfl's own unwinder (dwfl_attach_state + dwfl_getthread_frames) on the same registers and
 *     window: per stack with a Dwfl of the process kept, and the Dwfl's setup per process.
 * Usage: unwind-bench [ROUNDS]
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>

#include "elf_module.h"
#include "symbolizer.h"

static struct {
	uint64_t ip, sp, bp;
	uint8_t stack[16384];
	size_t size;
} captured;

static uint64_t stack_end(uint64_t sp)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long lo, hi;
	char line[512];
	uint64_t end = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && sp >= lo && sp < hi)
			end = hi;
	if (f)
		fclose(f);
	return end;
}

__attribute__((noinline)) static void capture(void)
{
	uint64_t end;

	__asm__ volatile("lea (%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(captured.ip), "=r"(captured.sp), "=r"(captured.bp));
	end = stack_end(captured.sp);
	captured.size = end - captured.sp < sizeof(captured.stack) ? end - captured.sp : sizeof(captured.stack);
	memcpy(captured.stack, (const void *)(uintptr_t)captured.sp, captured.size);
}

static volatile int sink;

__attribute__((noinline)) static int chain(int depth)
{
	volatile int pad[4] = { depth };
	int r;

	if (!depth) {
		capture();
		return 0;
	}
	r = chain(depth - 1) + pad[0];
	sink = r;
	return r;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- libdwfl's unwinder over the same window ---- */

static bool dwfl_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	if (addr < captured.sp || addr + 8 > captured.sp + captured.size)
		return false;
	memcpy(result, captured.stack + (addr - captured.sp), 8);
	return true;
}

static pid_t dwfl_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	if (*thread_argp)
		return 0;
	*thread_argp = arg;
	return getpid();
}

static bool dwfl_initial_registers(Dwfl_Thread *thread, void *arg)
{
	Dwarf_Word regs[2] = { captured.bp, captured.sp }; /* DWARF 6 (rbp), 7 (rsp) */

	dwfl_thread_state_register_pc(thread, captured.ip);
	return dwfl_thread_state_registers(thread, 6, 2, regs);
}

static const Dwfl_Thread_Callbacks dwfl_thread_callbacks = {
	.next_thread = dwfl_next_thread,
	.memory_read = dwfl_read,
	.set_initial_registers = dwfl_initial_registers,
};

static int dwfl_frame_cb(Dwfl_Frame *state, void *arg)
{
	Dwarf_Addr pc;

	(*(size_t *)arg)++;
	return dwfl_frame_pc(state, &pc, NULL) && *(size_t *)arg < 127 ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static Dwfl *dwfl_of_self(void)
{
	static char *debuginfo_path;
	static const Dwfl_Callbacks callbacks = {
		.find_elf = dwfl_linux_proc_find_elf, .find_debuginfo = dwfl_standard_find_debuginfo,
		.debuginfo_path = &debuginfo_path,
	};
	Dwfl *dwfl = dwfl_begin(&callbacks);

	dwfl_report_begin(dwfl);
	dwfl_linux_proc_report(dwfl, getpid());
	dwfl_report_end(dwfl, NULL, NULL);
	if (!dwfl_attach_state(dwfl, NULL, getpid(), &dwfl_thread_callbacks, (void *)1)) {
		fprintf(stderr, "dwfl_attach_state: %s\n", dwfl_errmsg(-1));
		exit(1);
	}
	return dwfl;
}

static size_t dwfl_unwind_once(Dwfl *dwfl)
{
	size_t n = 0;

	dwfl_getthread_frames(dwfl, getpid(), dwfl_frame_cb, &n);
	return n;
}

static size_t unwind_once(struct symbolizer *s, struct unwind_result *res)
{
	uint64_t ips[127];

	return symbolizer_unwind(s, getpid(), &(struct sym_unwind_input){
		.ip = captured.ip, .sp = captured.sp, .bp = captured.bp, .stack = captured.stack,
		.stack_size = captured.size, .stack_complete = captured.size < sizeof(captured.stack),
	}, ips, 127, res);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200000;
	struct symbolizer *s = symbolizer_new(NULL);
	struct unwind_result res;
	uint64_t t, cold;
	size_t n;
	int cold_rounds = rounds / 100 > 20 ? rounds / 100 : 20;

	chain(28);
	n = unwind_once(s, &res); /* opens the modules */
	t = cpu_ns();
	for (int i = 0; i < rounds; i++)
		unwind_once(s, &res);
	t = cpu_ns() - t;
	printf("frames per stack: %zu (end: %s, %u by CFI)\n", n, unwind_end_name(res.end), res.cfi_frames);
	printf("warm: %.2f us per stack, %.0f ns per frame (%d rounds)\n", t / 1e3 / rounds, (double)t / rounds / n,
	       rounds);

	/* Cold: what a rule cache miss costs, i.e. every frame without the cache: dwarf_cfi_addrframe on
	 * the module's .eh_frame and the rule compiled, for each frame of the stack (modules open). */
	{
		static uint64_t ips[127];
		static struct elf_module *mods[127];
		static uint64_t vaddrs[127];
		static char paths[127][256];
		size_t m = symbolizer_unwind(s, getpid(), &(struct sym_unwind_input){
			.ip = captured.ip, .sp = captured.sp, .bp = captured.bp, .stack = captured.stack,
			.stack_size = captured.size, .stack_complete = captured.size < sizeof(captured.stack),
		}, ips, 127, &res);
		struct cfi_rule rule;
		unsigned compiled = 0;

		for (size_t i = 0; i < m; i++) {
			struct sym_frame f;

			symbolizer_user(s, getpid(), i ? ips[i] - 1 : ips[i], &f);
			vaddrs[i] = f.file_address;
			snprintf(paths[i], sizeof(paths[i]), "%s", f.has_mapping ? f.mapping.path : "");
			for (size_t j = 0; j < i && !mods[i]; j++)
				if (!strcmp(paths[j], paths[i]))
					mods[i] = mods[j];
			if (!mods[i] && paths[i][0])
				mods[i] = elf_module_open(open(paths[i], O_RDONLY | O_CLOEXEC), NULL);
		}
		for (size_t i = 0; i < m; i++)
			if (mods[i])
				elf_module_cfi_rule(mods[i], vaddrs[i], &rule); /* loads each module's CFI once */
		cold = cpu_ns();
		for (int r = 0; r < cold_rounds; r++)
			for (size_t i = 0; i < m; i++)
				if (mods[i] && elf_module_cfi_rule(mods[i], vaddrs[i], &rule) == 0 && rule.found)
					compiled++;
		cold = cpu_ns() - cold;
		printf("cold (no rule cache: dwarf_cfi_addrframe + compile per frame): %.1f us per stack, %.0f ns per "
		       "frame (%u rules compiled)\n", (double)cold / 1e3 / cold_rounds, (double)cold / cold_rounds / m,
		       compiled);
		for (size_t i = 0; i < m; i++) {
			bool first = mods[i] != NULL;

			for (size_t j = 0; j < i; j++)
				first &= mods[j] != mods[i];
			if (first)
				elf_module_free(mods[i]);
		}
	}
	{
		Dwfl *dwfl = dwfl_of_self();
		size_t frames = dwfl_unwind_once(dwfl);

		t = cpu_ns();
		for (int i = 0; i < rounds / 10; i++)
			dwfl_unwind_once(dwfl);
		t = cpu_ns() - t;
		dwfl_end(dwfl);
		printf("libdwfl unwinder (dwfl_getthread_frames, Dwfl of the process kept): %.2f us per stack, %.0f ns "
		       "per frame (%zu frames, %d rounds)\n", t / 1e3 / (rounds / 10), (double)t / (rounds / 10) / frames,
		       frames, rounds / 10);
		t = cpu_ns();
		for (int i = 0; i < cold_rounds; i++) {
			dwfl = dwfl_of_self();
			dwfl_unwind_once(dwfl);
			dwfl_end(dwfl);
		}
		t = cpu_ns() - t;
		printf("libdwfl unwinder, new Dwfl per process (report maps, attach, first stack): %.0f us (%d rounds)\n",
		       t / 1e3 / cold_rounds, cold_rounds);
	}
	symbolizer_free(s);
	return 0;
}
