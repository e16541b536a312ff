// SPDX-License-Identifier: Apache-2.0
#include "python_process.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "process/elf_dynsym.h"
#include "proc_maps_share.h"
#include "python_code.h"

enum { SYM_RUNTIME, SYM_VERSION, SYM_CODE_TYPE, SYM_EVAL, NSYMS };
static const char *const symbol_names[NSYMS] = {
	"_PyRuntime", "Py_Version", "PyCode_Type", "_PyEval_EvalFrameDefault",
};

/* A file's name says it may be the interpreter: python3.11, python3, libpython3.12.so.1.0... */
bool python_process_interpreter_name(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "python", 6) || !strncmp(base, "libpython", 9);
}

/* The exported symbols of an ELF file and the lowest PT_LOAD address: 0 when _PyRuntime is among them. */
static int read_symbols(int fd, GElf_Sym syms[NSYMS], bool found[NSYMS], uint64_t *first_load)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	struct elf_dynsym_want want[NSYMS];
	GElf_Ehdr eh;
	size_t nph;
	int r = -ENOENT;

	*first_load = UINT64_MAX;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    elf_getphdrnum(elf, &nph))
		goto out;
	for (size_t i = 0; i < nph && i < 4096; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < *first_load)
			*first_load = ph.p_vaddr;
	}
	for (unsigned k = 0; k < NSYMS; k++)
		want[k] = (struct elf_dynsym_want){ .name = symbol_names[k] };
	elf_dynsym_lookup(elf, want, NSYMS, PYTHON_PROCESS_MAX_SYMBOLS);
	for (unsigned k = 0; k < NSYMS; k++) {
		found[k] = want[k].found;
		if (found[k])
			syms[k] = want[k].sym;
	}
	if (found[SYM_RUNTIME] && *first_load != UINT64_MAX)
		r = 0;
out:
	elf_end(elf);
	return r;
}

/* The interpreter in one file mapped at [start, end) from offset 0: 0, -ENOENT (not this one), or an error. */
static int try_file(const char *proc_root, uint32_t pid, uint64_t start, uint64_t end, struct python_process *out)
{
	GElf_Sym syms[NSYMS];
	bool found[NSYMS] = { false };
	uint8_t debug[PYTHON_DEBUG_OFFSETS_BYTES];
	uint64_t first_load, bias;
	uint32_t version;
	char path[128];
	int fd, r;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, proc_root, pid, start, end);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -ENOENT;
	r = read_symbols(fd, syms, found, &first_load);
	close(fd);
	if (r)
		return r;
	bias = start - (first_load & ~(uint64_t)4095);
	*out = (struct python_process){ .runtime = bias + syms[SYM_RUNTIME].st_value };
	if (found[SYM_CODE_TYPE])
		out->code_type = bias + syms[SYM_CODE_TYPE].st_value;
	if (found[SYM_EVAL]) {
		out->eval_start = bias + syms[SYM_EVAL].st_value;
		out->eval_end = out->eval_start + syms[SYM_EVAL].st_size;
	}
	/* Py_Version came with 3.11: an interpreter without it is older. */
	if (!found[SYM_VERSION] || !found[SYM_EVAL])
		return -ENOTSUP;
	r = python_read_process(NULL, (pid_t)pid, bias + syms[SYM_VERSION].st_value, &version, sizeof(version));
	if (r)
		return r;
	out->version_hex = version;
	if (python_layout_for_version(version, &out->layout))
		return -ENOTSUP;
	if ((version >> 16) == 0x030d &&
	    !python_read_process(NULL, (pid_t)pid, out->runtime, debug, sizeof(debug)) &&
	    !python_layout_apply_debug_offsets(&out->layout, debug, sizeof(debug)))
		out->debug_offsets = true;
	return 0;
}

int python_process_find(const char *proc_root, uint32_t pid, struct python_process *out)
{
	char line[512];
	unsigned tried = 0;
	int r = -ENOENT;
	FILE *f;

	if (!proc_root)
		proc_root = "/proc";
	elf_version(EV_CURRENT);
	f = proc_maps_fopen(proc_root, pid); /* the symbolizer's read of this record, when it made one */
	if (!f)
		return -errno;
	while (r == -ENOENT && tried < PYTHON_PROCESS_MAX_FILES && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, offset, ino;
		const char *file = strchr(line, '/');

		/* The name first: most lines are not an interpreter's, and sscanf() is the costly part. */
		if (!file || !python_process_interpreter_name(file) ||
		    sscanf(line, "%llx-%llx %*s %llx %*x:%*x %llu", &start, &end, &offset, &ino) != 4 || offset || !ino)
			continue;
		tried++;
		r = try_file(proc_root, pid, start, end, out);
	}
	fclose(f);
	return r;
}

void python_process_bpf_entry(const struct python_process *p, struct otelprof_python_proc *out)
{
	const struct python_layout *l = &p->layout;

	*out = (struct otelprof_python_proc){
		.interp_head = p->runtime + l->runtime_interp_head,
		.interp_threads_head = (uint16_t)l->interp_threads_head,
		.tstate_next = (uint16_t)l->tstate_next,
		.tstate_native_tid = (uint16_t)l->tstate_native_tid,
		.tstate_frame = (uint16_t)l->tstate_frame,
		.cframe_frame = l->cframe_frame == PYTHON_NO_FIELD ? OTELPROF_PYTHON_NONE : (uint16_t)l->cframe_frame,
		.frame_code = (uint8_t)l->frame_code,
		.frame_previous = (uint8_t)l->frame_previous,
		.frame_instr = (uint8_t)l->frame_instr,
		.frame_owner = (uint8_t)l->frame_owner,
		.frame_is_entry = l->frame_is_entry == PYTHON_NO_FIELD ? OTELPROF_PYTHON_NONE : (uint8_t)l->frame_is_entry,
		.owner_cstack = l->owner_cstack == PYTHON_NO_FIELD ? OTELPROF_PYTHON_NONE : (uint8_t)l->owner_cstack,
	};
}
