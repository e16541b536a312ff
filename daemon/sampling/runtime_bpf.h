/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The runtimes' BPF parts (runtimes/README.md): loaded once their process check first matches a
 * process rather than at start (the rest of this header), or with the core programs when
 * OTELPROFD_RUNTIMES_AT_START=1 (runtime_bpf_adopt()): the Python frame walk and the Go label
 * reader are about 40% of what the verifier checks at start (docs/how-it-works.md), paid by every
 * host, most of which run neither. A part is a program of bpf/profile.bpf.c that on_cpu_sample tail-calls through a prog
 * array; it is loaded from its own instance of the same object, every map of which reuses the main
 * instance's (bpf_map__reuse_fd(): the same ring buffer, scratch, per-process maps and the frozen
 * .rodata the main programs were verified with), then put in its prog array. A part the kernel
 * refuses is one logged line and a counted failure; the rest keeps working, and the part is not
 * tried again.
 *
 * Loading needs CAP_BPF and CAP_PERFMON, which the daemon drops after setup (privileges.h): a
 * thread of its own, started before the drop (runtime_bpf_start_loader()), keeps them while a part
 * waits, and drops them once none does (on a host without Python or Go, never: docs/hardening.md
 * says what that trades, and OTELPROFD_RUNTIMES_AT_START=1 starts no thread). Who owns what: struct runtime_bpf is the sampler's; each
 * loaded part owns its object (freed by runtime_bpf_close()).
 */
#ifndef OTELPROFD_RUNTIME_BPF_H
#define OTELPROFD_RUNTIME_BPF_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum runtime_bpf_id {
	RUNTIME_BPF_PYTHON, /* the CPython frame walk (py_walk_loop or py_walk_bounded) */
	RUNTIME_BPF_GO,     /* the goroutine label reader (go_read_labels) */
	RUNTIME_BPF_PARTS,
};

enum runtime_bpf_state {
	RUNTIME_BPF_OFF,     /* not wanted, or the kernel cannot run it (no load tried) */
	RUNTIME_BPF_WAITING, /* loaded at the first process its runtime's check matches */
	RUNTIME_BPF_LOADED,
	RUNTIME_BPF_FAILED,  /* the load failed (logged once): its runtime's processes get no BPF part */
};

/* What a part cost, for the self-metrics. */
struct runtime_bpf_stats {
	enum runtime_bpf_state state;
	uint64_t load_ns;        /* wall time of its load (the verifier, mostly) */
	uint64_t verified_insns; /* instructions the verifier processed for it (0 before 5.16) */
	uint64_t failures;       /* loads that failed (0 or 1: a failed part is not tried again) */
};

struct profile_bpf;

struct runtime_bpf_part {
	const char *name;          /* "python", "go" */
	const char *program;       /* its program in bpf/profile.bpf.c */
	const char *slot;          /* the prog array on_cpu_sample tail-calls it through */
	struct profile_bpf *skel;  /* its own instance of the object (maps shared), once loaded */
	struct runtime_bpf_stats stats;
};

struct runtime_bpf {
	struct profile_bpf *main;  /* borrowed: the sampler's loaded object */
	struct runtime_bpf_part parts[RUNTIME_BPF_PARTS];
	/* The loader thread (0 / false: none; loads run on the caller's thread). */
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;      /* with the thread: guards parts, requested, finished, stop */
	pthread_cond_t cond;
	unsigned requested;        /* parts asked for (bit per enum runtime_bpf_id) */
	unsigned finished;         /* parts whose load ended since runtime_bpf_take_finished() */
	bool stop;
	uint64_t keep_after;       /* capabilities the thread keeps once no part waits */
};

/* "python", "go". */
const char *runtime_bpf_name(enum runtime_bpf_id id);

/* Set up rb for main (before any part is set); parts start OFF. */
void runtime_bpf_init(struct runtime_bpf *rb, struct profile_bpf *main);
/* Part id waits for its first process: program is its program's name. */
void runtime_bpf_want(struct runtime_bpf *rb, enum runtime_bpf_id id, const char *program);
/*
 * Part id loaded and in its prog array? 0: yes; -ENOENT: the part is off; -ENOEXEC: its load failed
 * (now or before); -EINPROGRESS: it waits, and its load is asked of the loader thread, which never
 * blocks the caller (runtime_bpf_take_finished() says when it ended). Without the thread the part
 * is loaded now, on the caller's thread: 0 or the load's -errno.
 */
int runtime_bpf_request(struct runtime_bpf *rb, enum runtime_bpf_id id);
/* The parts whose load ended (loaded or refused) since the last call, a bit per enum runtime_bpf_id. */
unsigned runtime_bpf_take_finished(struct runtime_bpf *rb);
/* Part id's figures now. */
struct runtime_bpf_stats runtime_bpf_stats(struct runtime_bpf *rb, enum runtime_bpf_id id);
/* Part id's program was loaded with the main object (OTELPROFD_RUNTIMES_AT_START=1): put it in its
 * prog array. 0, or -errno (logged; the part is then refused). */
int runtime_bpf_adopt(struct runtime_bpf *rb, enum runtime_bpf_id id, const char *program);
/* Any part still waits. */
bool runtime_bpf_waiting(const struct runtime_bpf *rb);
/*
 * Start the thread that loads the waiting parts, before the caller drops its capabilities; the
 * thread keeps CAP_BPF and CAP_PERFMON besides keep_after (a mask of CAP_* bits) while a part
 * waits, then drops to keep_after and ends. None started when no part waits. 0 or -errno.
 */
int runtime_bpf_start_loader(struct runtime_bpf *rb, uint64_t keep_after);
/* Stop the thread and free the parts' objects. */
void runtime_bpf_close(struct runtime_bpf *rb);

struct bpf_object;
/* Instructions the verifier walked for the loaded programs of obj (kernels from 5.16 say; 0 before),
 * each program's said at debug level. */
uint64_t bpf_verified_insns(struct bpf_object *obj);

#endif
