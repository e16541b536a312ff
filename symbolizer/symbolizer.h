/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otelprofd's symbolizer: turns the addresses of a process (or of the kernel) into functions,
 * files and lines. A static library with no knowledge of the daemon; it never prints, and reports
 * failures as negative errno values and counters.
 *
 * Ownership: the symbolizer owns every string it returns. Strings and mapping data in a filled
 * struct sym_frame stay valid until the next call to any symbolizer function other than
 * symbolizer_stats(): a lookup may evict a cached module (the caches are bounded in entries and
 * bytes) or reload a JIT perf map. Callers copy what they keep right after each lookup.
 *
 * Not thread-safe: one symbolizer is used by one thread at a time.
 */
#ifndef OTELPROF_SYMBOLIZER_H
#define OTELPROF_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind.h"
#include "debuginfo_fetch.h"
#include "python_cache.h"

/* Most inline frames reported for one address (innermost first); deeper chains are cut. */
#define SYM_MAX_INLINE 16

enum sym_frame_kind {
	SYM_FRAME_NATIVE, /* user-space machine code */
	SYM_FRAME_KERNEL, /* kernel, kernel module or BPF program */
	SYM_FRAME_GO,     /* Go code, named from the binary's Go function table (.gopclntab) */
	SYM_FRAME_CPYTHON, /* a Python function run by CPython, named from its code object */
};

struct sym_line {
	const char *function;    /* readable (demangled) name, or NULL when unknown */
	const char *system_name; /* name as in the symbol table (mangled), or NULL */
	const char *file;        /* source file, or NULL */
	uint32_t line;           /* 0 when unknown */
	uint32_t column;         /* 0 when unknown */
};

struct sym_mapping {
	uint64_t start, limit;   /* runtime range [start, limit) in the process */
	uint64_t file_offset;    /* offset in the file that start maps */
	const char *path;        /* path as the process sees it */
	const char *build_id;    /* hex of the GNU build id, or NULL */
	const char *htlhash;     /* hex of the htlhash (see the OTLP attribute sheet), or NULL */
	const char *go_build_id; /* Go build id (.note.go.buildid), or NULL */
	uint64_t dev, inode;     /* identity of the file */
};

struct sym_frame {
	enum sym_frame_kind kind;
	bool has_mapping;           /* mapping is filled (user frames inside a file mapping) */
	struct sym_mapping mapping;
	uint64_t file_address;      /* address in the ELF file's own virtual address space; for the
				       kernel, the address itself */
	const char *module;         /* kernel frames: "vmlinux", a module name or "bpf"; JIT frames
				       found in a perf map: "[jit]"; else NULL */
	unsigned nlines;            /* 0: not symbolized (mapping and file_address still say where) */
	struct sym_line lines[SYM_MAX_INLINE]; /* innermost (inlined callee) first */
};

/* The bounds a zero in struct symbolizer_config stands for (docs/memory.md lists them all). */
#define SYMBOLIZER_DEFAULT_MAX_MODULES 1024
/* Files kept open (a descriptor each, no mapping: no RSS) for mappings whose module was evicted, or
 * could not be opened at their lookup (deferred, not admitted), so that a process that exited before
 * its samples were symbolized still has its modules opened (symbolizer_modules.c). Each cached module holds a descriptor too (libdwfl's):
 * a host's few hundred modules and these stay under the 1024 a service gets by default. */
#define SYMBOLIZER_MAX_KEPT_FILES 256
#define SYMBOLIZER_DEFAULT_MAX_PROCESSES 16384

struct symbolizer_config {
	const char *kallsyms_path; /* default "/proc/kallsyms"; read at the first kernel lookup */
	const char *kallsyms_cache_path; /* the kernel's lasting symbols saved here for the next run
				      of the same boot, and read back from it (kallsyms_cache.h);
				      NULL: none */
	uint64_t kallsyms_refresh_ns; /* kallsyms read again at most this often while frames land in
				      code that may change (BPF, ftrace; or miss); default 60 s */
	size_t max_modules;        /* cached ELF files; default SYMBOLIZER_DEFAULT_MAX_MODULES */
	size_t max_processes;      /* processes whose mappings are kept; default
				      SYMBOLIZER_DEFAULT_MAX_PROCESSES */
	size_t max_module_bytes;   /* bytes of cached modules (files mapped, decompressed sections,
				      our memory and libdw's estimated), held as modules grow, and of
				      loaded perf maps; one module's sections are never inflated past
				      half of it (a module over that share gets the symbols tier, see
				      symbolizer_next_notice()); default 2 GiB (the daemon's
				      --symbol-cache: 32 MiB); symbolizer_set_byte_bound() may keep
				      the cache under less */
	const char *const *debug_dirs; /* host directories with .build-id/xx/yyyy.debug files and
				      debuglink targets, NULL-terminated; default /usr/lib/debug */
	const char *debug_plain_dir; /* debug files with compressed DWARF kept decompressed here for
				      later opens (debug_plain.h); NULL: none */
	bool no_debuginfod;        /* never ask debuginfod, even with DEBUGINFOD_URLS set */
	uint64_t debuginfod_cache_bytes; /* bound of the debuginfod cache directory
				      ($DEBUGINFOD_CACHE_PATH); default 1 GiB */
	uint64_t debuginfod_timeout_ms; /* one download (on a thread of its own); default 30 s */
	uint64_t debuginfod_negative_ttl_ms; /* missing/failed build ids not asked again for this
				      long; default 10 min */
	bool no_map_files;         /* never open /proc/PID/map_files (always resolve under
				      /proc/PID/root); for tests and hosts that forbid map_files */
	bool no_perf_maps;         /* never read /tmp/perf-PID.map */
	uint64_t bad_file_retry_ns; /* how long a file that failed stays marked bad; default 60 s */
	uint64_t open_delay_ms;    /* tests: each open in the opener's thread starts this much later (a
				      file slow to open, on purpose); 0: none */
	struct python_cache_config python; /* the CPython code-object cache (python_cache.h) */
};

struct symbolizer_stats {
	uint64_t lookups;          /* user and kernel lookups */
	uint64_t symbolized;       /* lookups that found at least a function name */
	uint64_t no_mapping;       /* user address outside every file mapping */
	uint64_t process_gone;     /* the process had exited before its maps were read */
	uint64_t maps_file_reads;  /* /proc/PID/maps reads (each process's first, again once settled,
				      after a miss) */
	uint64_t processes_from_events; /* live processes whose mappings came whole from their history
				      (symbolizer_set_history()): /proc/PID/maps never read for them */
	uint64_t maps_events_rereads; /* their mappings asked of the history again (settled, a miss, a check) */
	uint64_t maps_checks_from_events; /* checks answered from such mappings instead of a maps read
				      (symbolizer_instance_maps_any()) */
	uint64_t maps_read_no_history; /* new processes read from /proc: no history (older than the
				      history, or its start not recorded) */
	uint64_t maps_read_inherited; /* ... a forked child that had not exec'd */
	uint64_t maps_read_gap;    /* ... a history with a gap (records lost or let go, too many maps) */
	uint64_t maps_read_unmapped; /* ... a whole history with no mapping yet (its first record taken
				      in its execve, before the new program was mapped) */
	uint64_t maps_events_gap;  /* processes served from their history whose history got a gap while
				      they lived: read from /proc/PID/maps from then on (their start
				      time checked first) */
	uint64_t processes_from_history; /* ... and its mappings came from its history instead
				      (symbolizer_set_history()) */
	uint64_t maps_completed_from_history; /* processes gone after a read of their maps that
				      missed an address (an exec's half-built maps): the mappings
				      they lacked came from their history */
	uint64_t roots_used_after_exit; /* files of an exited process opened through its root, held */
	uint64_t roots_replaced;   /* roots held dropped for another (SYM_ROOTS distinct roots) */
	uint64_t process_changed;  /* maps read again found another process or program at the pid: the
				      earlier mappings were kept and the entry retired */
	uint64_t module_open_failed; /* binary could not be opened, or was not the mapped file */
	uint64_t module_cache_full;  /* module not loaded because the cache was full */
	uint64_t modules_loaded;
	uint64_t modules_evicted;
	uint64_t processes_evicted; /* retired process instances dropped to make room (their later
				      lookups find no mappings) */
	uint64_t process_table_full; /* a process's mappings not kept: max_processes live instances */
	uint64_t instance_unknown;  /* lookups of an instance never prepared, or evicted or forgotten */
	bool kallsyms_hidden;      /* kallsyms shows zero addresses (kptr_restrict) */
	uint64_t module_cache_hits;   /* a mapping found its file already cached (or an identical copy) */
	uint64_t module_cache_misses; /* a mapping's file had to be opened */
	uint64_t modules_shared_by_build_id; /* a new file was an identical copy of a cached module's */
	uint64_t modules_share_refused; /* a new file carried a cached module's build id but was not an
				      identical copy of a root-owned file: it got a module of its own
				      (a forged build id, or only a stripped and a full build) */
	uint64_t modules_bad;      /* files marked bad (not ELF, corrupt, over bounds, not the mapped file) */
	uint64_t modules_cached;   /* modules in the cache now */
	uint64_t module_bytes;     /* bytes the cached modules account for now (measured after each
				      use: they grow as they are looked up) */
	uint64_t module_bytes_over; /* the byte bound could not be kept: only the module in use was left */
	uint64_t module_byte_bound; /* the byte bound kept now: max_module_bytes, or what
				      symbolizer_set_byte_bound() set */
	uint64_t byte_bound_evictions; /* modules and perf maps evicted at once because
				      symbolizer_set_byte_bound() lowered the bound under what was held */
	uint64_t files_kept;       /* files kept open for mappings whose module was evicted or not
				      opened yet (now; at most SYMBOLIZER_MAX_KEPT_FILES) */
	uint64_t files_kept_dropped; /* such files not kept (SYMBOLIZER_MAX_KEPT_FILES kept, or no
				      descriptor): their mappings open them through /proc later,
				      which fails once the process is gone */
	uint64_t modules_reopened_kept; /* modules opened through a kept file */
	uint64_t jit_symbolized;   /* lookups answered by a perf map */
	uint64_t perf_map_loads;   /* perf map files (re)read */
	uint64_t perf_map_bytes;   /* bytes the loaded perf maps hold now (in max_module_bytes) */
	uint64_t perf_maps_refused; /* perf maps not read: a symbolic link on the way, not a regular
				      file, or not owned by the process's euid (nor root); once per
				      process until the refusal changes */
	uint64_t perf_maps_too_big; /* perf maps over a bound: PERF_MAP_MAX_FILE_BYTES or _SYMBOLS,
				      or the byte bound with everything else evicted */
	uint64_t perf_maps_evicted; /* perf maps dropped to keep the byte bound (read again when
				      needed) */
	uint64_t kallsyms_reloads; /* /proc/kallsyms read again (modules or BPF programs changed) */
	uint64_t kallsyms_cache_hits;  /* kernel symbols read back from kallsyms_cache_path */
	uint64_t kallsyms_cache_stale; /* the cache was missing or of another boot, kernel or module set */
	uint64_t kallsyms_cache_refused; /* the cache file was not trusted (owner, mode, link) or
				      malformed: read from kallsyms instead */
	uint64_t kallsyms_cache_writes; /* tables saved to the cache */
	uint64_t kallsyms_cache_write_failed; /* saves that failed (no directory, read-only, full) */
	uint64_t kallsyms_full_reads; /* kallsyms read whole (the first read without a cache, reloads,
				      and lookups a table from the cache could not answer) */
	uint64_t kallsyms_thread_ns; /* time reads of kallsyms took on the reader's thread (the loop's
				      lookups went on meanwhile), wall */
	uint64_t kallsyms_thread_cpu_ns; /* ... and the CPU time they ran */
	uint64_t kallsyms_lookups_before_read; /* kernel lookups a table from the cache could not
				      answer, answered from it before kallsyms read whole was ready (by
				      the caller's deadline): a new BPF program's frame unnamed then */
	uint64_t kallsyms_joined;  /* full reads kept as the cache's mapped table plus the symbols it
				      leaves out (kallsyms_cache_join()), not whole on the heap */
	uint64_t unwinds;          /* symbolizer_unwind() calls */
	uint64_t unwind_frames_cfi; /* frames stepped with DWARF CFI */
	uint64_t unwind_frames_fp;  /* frames stepped with frame pointers (no CFI covered the pc) */
	uint64_t unwind_ends[UNWIND_END_MAX]; /* walks by how they ended (enum unwind_end) */
	uint64_t cfi_rule_cache_hits;   /* rules found compiled in the rule cache */
	uint64_t cfi_rule_cache_misses; /* rules compiled from a module's CFI */
	uint64_t cfi_rule_errors;  /* CFI the compiler refused (treated as no CFI for that pc) */
	uint64_t inline_truncated; /* inline chains longer than SYM_MAX_INLINE (cut) */
	uint64_t die_bound_hit;    /* DWARF lookups stopped by the DIE depth or visit bound */
	uint64_t lines_by_libdw;   /* compile units whose line program only libdw could read */
	uint64_t debuglink_too_big; /* .gnu_debuglink candidates too big to CRC-check (not used) */
	uint64_t debug_plain_read;  /* debug files opened from their decompressed copy */
	uint64_t debug_plain_written; /* decompressed copies made */
	uint64_t debug_plain_failed; /* copies neither read nor made (libdw inflated the file) */
	uint64_t debug_plain_evicted; /* copies removed to keep the directory's bound */
	uint64_t modules_too_big;  /* binaries and debug files whose compressed sections claim more than
				      half of max_module_bytes allows: kept without the DWARF (or the symbols)
				      they would inflate, so frames keep their mapping and build id */
	uint64_t go_tables;        /* modules opened with a Go function table read */
	uint64_t go_tables_refused; /* modules whose .gopclntab was refused (malformed, or older than
				      Go 1.16): their frames come from symbols and DWARF if any */
	uint64_t go_frames;        /* lookups answered from a Go function table */
	uint64_t vdso_frames;      /* lookups answered from the vDSO's image ([vdso] mappings) */
	uint64_t vdso_refused;     /* [vdso] mappings not served: the image could not be read, or the
				      mapping is another ABI's (its size differs) */
	uint64_t go_top_frames;    /* unwinds that ended at a Go top frame (runtime.goexit, mstart...) */
	uint64_t go_stack_switches; /* unwinds that ended at a Go stack switch (systemstack, mcall,
				       morestack, asmcgocall) or signal trampoline: callers on another stack */
	uint64_t go_sp_frames;     /* frames of Go text without CFI stepped with Go's SP-delta table */
	uint64_t debuginfod_reloaded; /* modules reopened because their debug file arrived */
	/* Admission (see symbolizer_next_notice()): a module is opened with its debug info only when
	 * it fits in half of max_module_bytes; otherwise, and when it left the cache under pressure or
	 * opened slowly not long ago, it is served by the cheaper tier (the file's ELF symbols and
	 * .eh_frame unwinding, nothing inflated). */
	uint64_t modules_full;      /* opens with debug info (DWARF lines, inline frames) */
	uint64_t modules_symbols_tier; /* opens served by the cheaper tier, all reasons */
	uint64_t modules_tier_too_big; /* ... because the debug info is over the module's share */
	uint64_t modules_tier_thrash;  /* ... because it left the cache under pressure soon before */
	uint64_t modules_tier_slow;    /* ... because its last full open took over 100 ms */
	uint64_t module_pressure_evictions; /* modules evicted to make room (not for being idle) */
	uint64_t modules_not_admitted; /* opens refused: the module left the cache under pressure at
				      the symbols tier too, not long before, and did not fit without
				      evicting another (its frames keep mapping and build id; its
				      mappings look again a second later) */
	uint64_t module_opens_deferred; /* lookups that found their module unopened after the open
				      deadline (symbolizer_set_open_deadline()): frames keep their
				      mapping, unsymbolized */
	uint64_t module_history_dropped; /* remembered modules forgotten for newer ones (bounded table) */
	uint64_t module_open_ns_total; /* time spent opening modules */
	uint64_t module_open_ns_max;   /* the longest open */
	uint64_t module_open_bytes_max; /* the most bytes one open accounted for */
	uint64_t module_index_ns_total; /* of module_open_ns_total: building the modules' indexes (symbol
				      table, result cache, address-to-CU table, .eh_frame table) so
				      that their first lookups do not */
	uint64_t cus_prebuilt;     /* the largest compile units' function index and line program
				      reader built by their module's open (opener thread) */
	uint64_t cus_prebuilt_cpu_ns; /* the CPU time that took (in module_index_ns_total) */
	uint64_t cu_builds;        /* compile units' first lookups (their function index and line
				      program built then, on the caller's thread) */
	uint64_t cu_build_ns;      /* their wall time in all */
	uint64_t cu_build_cpu_ns;  /* their CPU time in all */
	uint64_t cu_build_ns_max;  /* the longest one's wall time */
	uint64_t cu_build_cpu_ns_max; /* the most CPU time of one */
	uint64_t module_index_builds_at_lookup; /* module indexes a lookup built instead (while a
				      deadline is set, the caller's thread did: elf_module.h) */
	uint64_t notices_dropped;   /* cheaper-tier notices not kept (the caller did not take them) */
	struct python_cache_stats python; /* CPython code objects (refreshed by every call) */
	struct debuginfo_fetch_stats debuginfod; /* downloads (zero without DEBUGINFOD_URLS);
				      refreshed by symbolizer_maintain() */
};

struct symbolizer;

struct symbolizer *symbolizer_new(const struct symbolizer_config *config);
/* Frees everything but a module open still running in the opener's thread: that thread is left
 * to end it and free what it opened, so freeing never waits for a file however slow to open (the
 * config's debug_dirs must then outlive the process's run, and its debuginfod client is kept). */
void symbolizer_free(struct symbolizer *s);
/* A symbolizer_free() left a module's open running on the opener's thread (it frees what it opens):
 * the process should end with _exit(), running no exit handlers (libraries' and sanitizers') under
 * that thread. */
bool symbolizer_open_left_running(void);

/*
 * Process instances: a caller that tracks processes names each one (each program a pid runs, so a
 * new key after a fork or an exec) with a non-zero instance key, and the symbolizer keeps that
 * instance's mappings apart from every other instance of the pid until symbolizer_forget_instance().
 * Only symbolizer_prepare_instance() reads an instance's mappings, so call it while pid is that
 * instance (at its exec record, or when its sample arrives); lookups of an instance never prepared
 * fail with -ESRCH rather than read whatever the pid runs now. Key 0 (the functions without
 * "_instance") means whatever pid runs now, read on first use.
 *
 * Read the mappings of (pid, instance) now, so that its samples can be symbolized after it exits or
 * execs. 0, -ESRCH (gone), -ENOSPC (max_processes instances kept and none retired; counted) or
 * another -errno. When full, the least recently used retired instance is dropped (counted).
 * start_ns: the process's start (CLOCK_BOOTTIME ns, as BPF records give it), checked against what
 * /proc says so that a pid reused before this call is refused (-ESRCH, counted in process_changed);
 * 0: unchecked. Maps read again later are only taken while the pid runs the same process and program.
 */
int symbolizer_prepare_instance(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t start_ns);
int symbolizer_prepare_process(struct symbolizer *s, pid_t pid);
/* As symbolizer_prepare_instance(), for a record taken at time_ns (CLOCK_MONOTONIC): when the
 * process is gone (or its pid taken by another), its mappings come from the history set with
 * symbolizer_set_history(), in the program it ran at time_ns (0: no history asked). */
int symbolizer_prepare_instance_at(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t start_ns,
				   uint64_t time_ns);

/* A mapping as a process's history gives it: its file by path (under the root of *root_pid, see
 * symbolizer_history_fn), checked by device and inode as any other; "[vdso]": the vDSO. */
struct symbolizer_mapping {
	uint64_t start, end, offset;
	uint64_t dev, inode;
	const char *path; /* the history's, copied by the symbolizer before it calls anything else */
};
/* Most mappings a history gives one process. */
#define SYMBOLIZER_HISTORY_MAX_MAPS 128
/* How much of a program's mappings a history answer is (see symbolizer_history_fn). */
enum symbolizer_history_whole {
	SYMBOLIZER_HISTORY_GAP,       /* some may be missing (records lost or let go, too many) */
	SYMBOLIZER_HISTORY_INHERITED, /* a forked child that has not exec'd: what it inherited is not in it */
	SYMBOLIZER_HISTORY_WHOLE,     /* every executable mapping the program made until now */
};
/*
 * The mappings of the instance of pid that started at start_ns (CLOCK_BOOTTIME, as
 * symbolizer_prepare_instance()'s) in the program it ran at time_ns (CLOCK_MONOTONIC), at most max
 * into out; *root_pid: a live process whose root directory the paths are opened under (0: the
 * host's). 0 with *n > 0, or -errno (none known: the instance stays unknown, never another's).
 * whole: NULL for a process gone (any mapping helps); else the process lives, its mappings until
 * now are asked (the history up to date), and *whole says whether they are all of them: then the
 * symbolizer reads no /proc/PID/maps for it.
 */
typedef int (*symbolizer_history_fn)(void *ctx, pid_t pid, uint64_t start_ns, uint64_t time_ns,
				     struct symbolizer_mapping *out, size_t max, size_t *n, pid_t *root_pid,
				     enum symbolizer_history_whole *whole);
/* Set (fn NULL: clear) where the mappings of processes come from: those gone before their maps were
 * read, and those whose history is whole (instead of /proc/PID/maps). */
void symbolizer_set_history(struct symbolizer *s, symbolizer_history_fn fn, void *ctx);
/* Whether a file-backed executable mapping of (pid, instance) has a path match() accepts, from its
 * mappings when they came whole from its history (asked anew, so up to now): 1 yes, 0 no; -ENODATA
 * when they are not known whole (read /proc/PID/maps to know). Lets a check skip that read. */
int symbolizer_instance_maps_any(struct symbolizer *s, pid_t pid, uint64_t instance, bool (*match)(const char *path));
/* Read the mappings of a live instance again (a program just exec'd has mapped its libraries since).
 * What was read before stays when the process is gone (-ESRCH) or the instance retired. An instance
 * never read is prepared, checked against start_ns as symbolizer_prepare_instance() does (its
 * process may have exited and its pid been reused meanwhile). */
int symbolizer_refresh_instance(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t start_ns);
/* Symbolize a user address of pid. 0 (frame filled, maybe with nlines == 0), or -errno. */
int symbolizer_user_instance(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t address,
			     struct sym_frame *frame);
int symbolizer_user(struct symbolizer *s, pid_t pid, uint64_t address, struct sym_frame *frame);
/*
 * CPython: (pid, instance) runs an interpreter of this layout (PyCode_Type at code_type, 0 when
 * unknown). Its Python frames then get frame addresses (python_cache.h) that
 * symbolizer_user_instance() turns into SYM_FRAME_CPYTHON frames: qualified name, file and line.
 * The code objects are read from the process when first seen, so call
 * symbolizer_python_frame() while it lives (when its sample arrives). 0 or -errno as in
 * python_cache_attach() and python_cache_frame_address().
 */
int symbolizer_python_attach(struct symbolizer *s, pid_t pid, uint64_t instance, const struct python_layout *layout,
			     uint64_t code_type);
bool symbolizer_python_attached(struct symbolizer *s, pid_t pid, uint64_t instance);
int symbolizer_python_frame(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t code, uint64_t instr,
			    uint64_t *address);

/* Read kallsyms now rather than at the first kernel lookup (a user that wants it paid ahead of a
 * time-critical lookup). Idempotent. */
void symbolizer_load_kallsyms(struct symbolizer *s);
/* Symbolize a kernel address (the first call reads kallsyms unless it was loaded). 0, or -ENOENT
 * when no symbol covers it (frame still filled). */
int symbolizer_kernel(struct symbolizer *s, uint64_t address, struct sym_frame *frame);

/*
 * The user state of one sample for symbolizer_unwind(): registers and a copy of the stack at
 * [sp, sp + stack_size). stack_complete: the copy ended where the stack's mapping did.
 */
struct sym_unwind_input {
	uint64_t ip, sp, bp;
	const void *stack;
	size_t stack_size;
	bool stack_complete;
};

/*
 * Unwind a user stack of pid with DWARF CFI (frame pointers where no CFI covers a frame) into
 * ips[0 .. max), leaf first: ips[0] is in->ip, the rest are return addresses. Rules are compiled from
 * the mapped files' .eh_frame/.debug_frame and cached per module (bounded). Returns the frames
 * filled; result says how the walk ended (counted in the stats). The process's mappings are read as
 * for symbolizer_user().
 */
size_t symbolizer_unwind_instance(struct symbolizer *s, pid_t pid, uint64_t instance,
				  const struct sym_unwind_input *in, uint64_t *ips, size_t max,
				  struct unwind_result *result);
size_t symbolizer_unwind(struct symbolizer *s, pid_t pid, const struct sym_unwind_input *in, uint64_t *ips,
			 size_t max, struct unwind_result *result);

/*
 * pid no longer runs the instances kept for it (it exited, exec'd, or the pid was given to a new
 * process): they stay for the lookups of their samples but are never read from /proc again, and
 * may be evicted when the table is full. Key 0 of pid is dropped.
 */
void symbolizer_retire_process(struct symbolizer *s, pid_t pid);
/* Drop what is kept for one instance of pid (its samples were built). */
void symbolizer_forget_instance(struct symbolizer *s, pid_t pid, uint64_t instance);
/* Drop only the mappings kept for one instance, to be read anew (what a runtime attached stays: its
 * room still holds the process, and would not attach it again). */
void symbolizer_forget_mappings(struct symbolizer *s, pid_t pid, uint64_t instance);
/* Drop what is kept for pid, every instance. */
void symbolizer_forget_process(struct symbolizer *s, pid_t pid);
/* The least byte bound symbolizer_set_byte_bound() sets (or max_module_bytes when smaller): a module
 * gets half of it, so files up to 8 MiB (a large program's, Python's) keep their ELF symbols, and
 * their frames their names, however little the rest of the caller leaves (at 4 MiB, a 4 MiB binary's
 * frames were left as offsets). */
#define SYMBOLIZER_MIN_BYTE_BOUND ((size_t)16 << 20)
/*
 * Keep the cache's bytes under bytes from now on rather than under max_module_bytes (a caller that
 * bounds its whole memory gives the cache what the rest leaves), never more than max_module_bytes
 * nor less than SYMBOLIZER_MIN_BYTE_BOUND; call it again to raise it back. Lowered under what is
 * held, the least recently used modules and perf maps are evicted at once (counted in
 * byte_bound_evictions, and as evictions under pressure: their next opens are at the symbols tier
 * for a while, so a bound that moves does not reopen modules at full cost in a loop). A module's
 * share (the full tier's admission) is half of the bound now.
 */
void symbolizer_set_byte_bound(struct symbolizer *s, size_t bytes);
/* Housekeeping between batches: drop modules unused for a while, reload kallsyms when kernel
 * modules changed (or every kallsyms_refresh_ns while frames land in BPF or ftrace code, or miss). */
void symbolizer_maintain(struct symbolizer *s);

const struct symbolizer_stats *symbolizer_stats(const struct symbolizer *s);

/*
 * While a deadline is set (CLOCK_MONOTONIC; 0: none), a lookup waits for a module's open no later
 * than deadline_ns: the open runs in a thread of the symbolizer's own (one at a time, up to
 * SYM_PENDING_OPENS queued with their files open, so a process that exits meanwhile still gets
 * them), and a lookup that finds it unfinished by then fills the mapping and build id only and
 * counts it in module_opens_deferred; a later lookup takes the module. However long an open takes,
 * a caller's batch of lookups (a loop's turn, a profile built at shutdown) ends by its deadline,
 * but for the first kernel lookup's read of kallsyms, by whose time the deadline moves.
 * Deadline 1 defers every open (none is started) while the caller sheds work.
 */
void symbolizer_set_open_deadline(struct symbolizer *s, uint64_t deadline_ns);
/* Wait for the opens the opener's thread runs or has queued until deadline_ns (0: however long they
 * take), caching their modules: true when none is left. */
bool symbolizer_settle_opens(struct symbolizer *s, uint64_t deadline_ns);

/* A module served by the cheaper tier, told once per module (library code never prints: the
 * caller logs it). Strings are copies (path cut to fit). */
struct sym_notice {
	char path[256];        /* the mapped file's path as its process sees it */
	char build_id[129];    /* hex, or "" */
	const char *why;       /* static words: why the cheaper tier */
	uint64_t bytes;        /* the most the module accounted for (at the full tier when it was) */
	uint64_t share;        /* the most one module may account for at the full tier */
	uint64_t open_ns;      /* its last open's time */
};
/* The oldest notice not taken yet into out: false when there is none. */
bool symbolizer_next_notice(struct symbolizer *s, struct sym_notice *out);

#endif
