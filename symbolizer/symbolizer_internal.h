/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the files of struct symbolizer: symbolizer.c (life cycle, kernel lookups,
 * maintenance), symbolizer_process.c (the per-process instance table and its mappings),
 * symbolizer_modules.c (the module cache), symbolizer_perf_maps.c (each process's JIT perf map)
 * and symbolizer_lookup.c (user-space lookups and unwinding). It holds their structs and the
 * functions they share, named symbolizer__*(). Nothing else includes it; the API is symbolizer.h.
 *
 * Ownership: the symbolizer owns every process entry (freed by symbolizer__process_free() once
 * unlinked), every cached module (symbolizer__module_free() once out of the table) and every perf
 * map (symbolizer__jit_drop()). A mapping's module pointer is a counted reference (refs), not
 * ownership.
 */
#ifndef OTELPROF_SYMBOLIZER_INTERNAL_H
#define OTELPROF_SYMBOLIZER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cfi.h"
#include "elf_module.h"
#include "htlhash.h"
#include "kallsyms.h"
#include "kallsyms_reader.h"
#include "module_history.h"
#include "module_opener.h"
#include "perf_map.h"
#include "symbolizer.h"

#define PROCESS_BUCKETS 4096
/* Compiled CFI rules remembered (direct-mapped by module and address). */
#define RULE_CACHE_SLOTS 8192
/* Operations a slot of that cache holds: a rule's CFA, return address and frame pointer take 3 to 5
 * nearly always; a longer rule (a PLT stub's takes 13) goes to the few slots that hold CFI_MAX_OPS. */
#define RULE_SLOT_OPS 6
#define RULE_LONG_SLOTS 256
/* File identities (device, inode) remembered per module: identical copies of one file. */
#define MODULE_FILE_IDS 4
/* Cheaper-tier notices waiting for the caller (symbolizer_next_notice()); more are dropped, counted. */
#define SYM_NOTICE_SLOTS 16

struct file_id {
	uint64_t dev, inode;
	char htlhash[SYM_HTLHASH_HEX_LEN + 1]; /* of this file's bytes; "" when unreadable */
};

struct cached_module {
	struct file_id ids[MODULE_FILE_IDS]; /* files known to hold this module */
	unsigned nids;
	struct elf_module *elf;  /* NULL: the file is bad until bad_until_ns */
	uint64_t bad_until_ns;
	uint64_t last_used;      /* lookup tick, for LRU */
	uint64_t generation;     /* maintain() generation of the last use */
	unsigned refs;           /* mappings pointing here */
	size_t bytes;            /* elf_module_bytes() when last measured (after each use) */
	uint64_t serial;         /* unique per module ever opened: the rule cache's key */
	struct module_key key;   /* its entry in the module history */
	enum module_tier tier;   /* what it was opened with */
	bool shareable;          /* may serve identical copies in other files: its file is root's and
				    writable by root alone (nobody else can change what was compared),
				    and its debug file came from no process's root */
	/* Evicted while mappings still pointed here: out of modules[], elf freed, its file kept open
	 * (kept_fd) so that those mappings open it again without /proc (their process may be gone).
	 * Freed by the last mapping's release (symbolizer__module_release()). */
	bool kept;
	int kept_fd;
	size_t *nkept;           /* the symbolizer's count of kept files, while kept */
};

/* A compiled CFI rule of (module serial, ELF address) of at most RULE_SLOT_OPS operations, its
 * struct cfi_rule's fields inline (128 bytes rather than 296); serial 0 marks an empty slot. */
struct rule_slot {
	uint64_t serial, vaddr;
	struct cfi_expr cfa, ra, bp, sp; /* as in struct cfi_rule */
	bool found, signal_frame;
	uint8_t source;       /* enum rule_source: where the rule came from, for the counters */
	uint8_t nops;
	struct cfi_op ops[RULE_SLOT_OPS];
};

_Static_assert(sizeof(struct rule_slot) == 128, "docs/memory.md states a rule slot's size");

/* A rule of more operations than a rule_slot holds, whole. */
struct rule_long_slot {
	uint64_t serial, vaddr;
	struct cfi_rule rule;
	uint8_t source;
};

enum rule_source {
	RULE_CFI = 0,   /* the module's CFI (or none: rule.found false) */
	RULE_GO_SP,     /* a Go function's SP delta (no CFI covered it) */
	RULE_GO_TOP,    /* a Go top frame: the walk ends, complete */
	RULE_GO_SWITCH, /* a Go stack switch or signal trampoline: the walk ends, complete */
};

struct sym_map {
	uint64_t start, end, offset;
	uint64_t dev, inode;
	char *path;
	struct cached_module *module; /* NULL until first use */
	bool tried;                   /* module lookup done (successful or not) */
	bool vdso;                    /* the [vdso] mapping: no file, served by the symbolizer's own
					 vDSO image (symbolizer__vdso_module()) */
	uint64_t retry_ns;            /* the file could not be opened for this process: not before then */
};

/*
 * Which process and program a pid runs: its start time and its executable. Maps read again later (a
 * lookup missed every mapping) are only taken when the identity is unchanged: a reader that falls
 * behind must not give an exited process the mappings of the one that reused its pid, nor a program
 * the mappings of the one it exec'd.
 */
struct process_identity {
	uint64_t start_ticks; /* /proc/PID/stat field 22 */
	dev_t exe_dev;        /* /proc/PID/exe; 0 when it has none (kernel thread, or unreadable) */
	ino_t exe_ino;
};

/*
 * The mappings of one process instance. An instance is (pid, a caller's key: the daemon's process
 * table gives one per process and per exec): a pid reused, or a process that exec'd, never reads
 * or shows another instance's mappings. Key 0 is the pid's current process (callers without
 * instances). Only symbolizer_prepare_instance() creates an entry for a non-zero key, and only
 * while the pid is that instance; once retired (its program or process ended) an entry is never
 * read from /proc again, and stays until forgotten or, when the table is full, evicted.
 */
struct sym_process {
	pid_t pid;
	uint64_t instance;          /* caller's key; 0: the pid's current process */
	bool retired;               /* the pid no longer runs this instance: /proc is not read for it */
	struct process_identity identity; /* what the pid ran when its maps were first read */
	bool identity_known;        /* identity was read (maps were read once) */
	uint64_t last_used;         /* lookup tick, to evict the least recently used retired entry */
	struct sym_map *maps; /* file-backed mappings, sorted by start */
	size_t nmaps;
	uint64_t refreshed_ns;
	unsigned refreshes;         /* maps read again after a miss */
	struct perf_map *jit;       /* /tmp/perf-NSPID.map, or NULL */
	size_t jit_bytes;           /* perf_map_bytes(jit), in the symbolizer's byte bound */
	uint64_t jit_size, jit_ino; /* the file last read or refused after reading: not read again
				       until it changes; 0 when evicted (read again) */
	uint64_t jit_checked_ns;    /* last time its size was checked; 0 never */
	uint64_t jit_used;          /* lookup tick of its last use, for LRU among modules and maps */
	int jit_refused;            /* -errno of the last refusal, counted once until it changes */
	uint64_t root_dev, root_ino; /* its root directory, held in the symbolizer's roots */
	bool root_held;
	bool history_tried;         /* the history was asked (symbolizer_set_history()): once per entry */
	bool from_events;           /* its mappings came whole from its history while it lived: never
				       read from /proc; refreshed from the history */
	uint64_t start_ns, record_ns; /* the start time and the record time it was prepared with (0:
				       unknown), to ask its history */
	struct sym_process *next; /* hash chain */
};

/* Roots held (symbolizer_roots.c): distinct root directories (the host's, each container's) whose
 * processes' files can be opened after they exit; past it the least recently used is closed. */
#define SYM_ROOTS 64

struct sym_root {
	uint64_t dev, ino; /* the directory's identity */
	int fd;            /* O_PATH, owned */
	uint64_t used;     /* tick of its last use */
};

/* Opens waiting for the opener's thread (module_opener.h), first the one it runs: their files are
 * open already, so a process that exits meanwhile still gets its modules. More are deferred, counted. */
#define SYM_PENDING_OPENS 64

/* A module the opener's thread opens, taken at a later lookup: what its open decided before, and the
 * file it opens. */
struct pending_open {
	struct cached_module *m;      /* prepared (key, tier, serial), not cached yet */
	enum module_tier_reason reason; /* why its tier */
	uint64_t started;             /* when its open was asked for (the history's open cost) */
	uid_t uid;                    /* the file's owner and mode (shareable copies) */
	mode_t mode;
	struct sym_map file;          /* the mapping's dev, inode and path (owned copy) */
	int fd, root;                 /* the file, and the process's root (debug files next to it) */
	struct elf_module_options options; /* options.path is file.path */
};

struct symbolizer {
	struct symbolizer_config config;
	struct symbolizer_stats stats;
	struct debuginfo_fetch *debuginfod; /* NULL without DEBUGINFOD_URLS */
	struct kallsyms *kallsyms;
	uint64_t modules_hash;      /* of /proc/modules when kallsyms was read */
	uint64_t kallsyms_loaded_ns; /* 0: not read yet (it is read at the first kernel lookup) */
	uint64_t changeable_lookups_at_load;
	uint64_t kallsyms_cached_modules_hash; /* the cache file's, once read or written this run */
	struct kallsyms_reader *kallsyms_reader; /* a read of kallsyms running on its thread, or NULL */
	bool kallsyms_full_failed; /* the last read of kallsyms failed (a partial table is kept) */
	bool kallsyms_cache_known;  /* the cache file holds this boot's table (read or written by us) */
	struct sym_process *buckets[PROCESS_BUCKETS];
	size_t nprocesses;
	struct cached_module **modules;
	size_t nmodules;
	size_t module_bytes;
	size_t perf_map_bytes;      /* of every loaded perf map: shares the byte bound */
	size_t byte_bound;          /* what module_bytes + perf_map_bytes are kept under now: the config's
				       max_module_bytes, or less (symbolizer_set_byte_bound()) */
	size_t nkept;               /* evicted modules kept with their file open (cached_module.kept) */
	size_t nperf_maps;          /* processes holding a perf map */
	uint64_t tick;
	uint64_t changeable_lookups; /* kernel lookups in BPF or ftrace code, or that missed */
	uint64_t generation;
	uint64_t next_serial;
	struct rule_slot *rules;    /* RULE_CACHE_SLOTS, allocated at the first unwind */
	struct rule_long_slot *long_rules; /* RULE_LONG_SLOTS, with rules */
	struct cfi_rule rule;       /* the rule find_rule() returned last, unpacked from its slot */
	struct python_cache *python; /* CPython code objects; NULL until a process is attached */
	struct module_history *history; /* what each module cost and how it was served */
	uint64_t open_deadline_ns;  /* no module is opened from then on (0: none); see
				       symbolizer_set_open_deadline() */
	struct module_opener *opener; /* opens modules while a deadline is set; NULL until then */
	struct pending_open pending[SYM_PENDING_OPENS]; /* its queue: pending[0] runs when it is busy */
	size_t npending;
	struct sym_notice notices[SYM_NOTICE_SLOTS]; /* a ring: first at notice_head */
	struct cached_module *vdso; /* the vDSO image, opened at the first [vdso] mapping used; outside
				       modules[] (never evicted: a few KiB), freed with the symbolizer */
	size_t vdso_bytes;          /* the image's size: a [vdso] mapping of another size (a 32-bit
				       process's) is not served by it */
	bool vdso_tried;            /* the image was read (or failed to be) */
	size_t notice_head, nnotices;
	struct sym_root roots[SYM_ROOTS];
	unsigned nroots;
	symbolizer_history_fn history_fn; /* mappings of processes gone, or NULL */
	void *history_ctx;
};

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t symbolizer__now_ns(void);

/* A CPython frame address (symbolizer_python.c). */
int symbolizer__python_lookup(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t address,
			      struct sym_frame *frame);

/* ---- the instance table (symbolizer_process.c) ---- */

/* Free an entry already unlinked from the table, its mappings and perf map. */
void symbolizer__process_free(struct sym_process *p);
/* The entry of (pid, instance); a missing one is read from /proc when create is set. */
int symbolizer__get_process(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t start_ns, bool create,
			    struct sym_process **out);
/* The same, a process gone by then given its mappings from the history at time_ns (0: none). */
int symbolizer__get_process_at(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t start_ns,
			       uint64_t time_ns, bool create, struct sym_process **out);
/* The mapping of address, reading the maps again (rate-limited) when it misses every one. */
struct sym_map *symbolizer__find_map_refresh(struct symbolizer *s, struct sym_process *p, uint64_t address);
/* An O_PATH fd of /proc/PID/root (the caller closes it), or -errno. */
int symbolizer__open_root(pid_t pid);

/* ---- roots held (symbolizer_roots.c) ---- */

/* Hold p's root directory (once per distinct root), for its files after it exits. */
void symbolizer__hold_root(struct symbolizer *s, struct sym_process *p);
/* The same, with the root of another (live) process: a process gone, its files under its parent's. */
void symbolizer__hold_root_of(struct symbolizer *s, struct sym_process *p, pid_t root_pid);
/* /proc/PID/root, or once pid has exited, a copy of the root a process of pid had (the caller
 * closes it). -errno when neither. */
int symbolizer__open_root_of(struct symbolizer *s, pid_t pid);
/* Close every held root. */
void symbolizer__roots_free(struct symbolizer *s);

/* ---- the module cache (symbolizer_modules.c) ---- */

/* Free a module already out of the table (NULL accepted). */
void symbolizer__module_free(struct cached_module *m);
/* A mapping no longer points at m (NULL accepted): a kept module is freed with its last mapping. */
void symbolizer__module_release(struct cached_module *m);
/* The opens queued dropped and the opener let go (symbolizer_free()): an open still running is left
 * to its thread, which frees what it opens (true: one was, and the options it was given, the
 * debuginfod client among them, must outlive it). */
bool symbolizer__pending_free(struct symbolizer *s);
/* Remove modules[i]; mappings still pointing at it open the file again when next used: through its
 * file, kept open, when it could be kept (SYMBOLIZER_MAX_KEPT_FILES), else through /proc. */
void symbolizer__evict_at(struct symbolizer *s, size_t i);
/* Bytes of every cached module and loaded perf map: what byte_bound bounds. */
size_t symbolizer__bytes_held(const struct symbolizer *s);
/* Evict until at most max_modules - room modules are cached and modules and perf maps fit the byte
 * bound, least recently used first; keep and keep_jit's perf map stay. */
void symbolizer__enforce_bounds(struct symbolizer *s, size_t room, const struct cached_module *keep,
				const struct sym_process *keep_jit);
/* Measure m again after a use (it grows) and keep the byte bound. */
void symbolizer__module_measure(struct symbolizer *s, struct cached_module *m);
/* The module of map's file, opened and cached on first use; NULL when it cannot be had now. */
struct cached_module *symbolizer__module_for_map(struct symbolizer *s, pid_t pid, struct sym_map *map);
/* The htlhash of the file the mapping maps, or NULL. */
const char *symbolizer__module_htlhash(const struct cached_module *m, const struct sym_map *map);
/* The module of a [vdso] mapping: this process's own vDSO image, opened once; NULL when it cannot
 * be read or does not match the mapping's size. */
struct cached_module *symbolizer__vdso_module(struct symbolizer *s, const struct sym_map *map);
/* Drop modules whose debug file debuginfod has since downloaded (opened again on next use). */
void symbolizer__reload_fetched(struct symbolizer *s);

/* ---- perf maps (symbolizer_perf_maps.c) ---- */

/* Free p's perf map; it is read again at the next check. */
void symbolizer__jit_drop(struct symbolizer *s, struct sym_process *p);
/* Fill frame from p's perf map (read or refreshed as needed); false when it does not hold address. */
bool symbolizer__symbolize_jit(struct symbolizer *s, struct sym_process *p, uint64_t address,
			       struct sym_frame *frame);

#endif
