/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The code objects of CPython processes, cached per process instance (pid and the caller's instance
 * key, as the symbolizer's processes are), and the frame addresses that stand for a Python frame in
 * a stack: a tag in the top bits, the code object's address and the instruction index (lasti).
 *
 * Bounded: max_processes instances (the least recently used one is dropped to make room), at most
 * PYTHON_CACHE_CODES_PER_PROCESS code objects each (then the process's codes are dropped and read
 * again as needed), and max_bytes over all (the least recently used other processes' codes go
 * first). Unreadable or malformed code objects are remembered as bad and counted, never retried
 * for the same address until the process's codes are dropped.
 *
 * The cache owns its entries; a struct python_code it returns stays valid until the next call that
 * reads a code object or drops entries.
 */
#ifndef OTELPROF_PYTHON_CACHE_H
#define OTELPROF_PYTHON_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python_code.h"
#include "python_layout.h"

#define PYTHON_CACHE_CODES_PER_PROCESS 8192
/* lasti saturates here (the line of an instruction beyond is not known). */
#define PYTHON_LASTI_MAX 0xffff

struct python_cache_config {
	size_t max_processes;  /* default 4096 */
	size_t max_bytes;      /* code objects' names, files and line tables, and the tables; default 64 MiB */
	python_read_fn read;   /* NULL: the process's memory (process_vm_readv) */
	void *read_ctx;
};

struct python_cache_stats {
	uint64_t processes;      /* instances attached now */
	uint64_t codes;          /* code objects cached now (bad ones included) */
	uint64_t bytes;          /* bytes held now */
	uint64_t codes_read;     /* code objects read */
	uint64_t codes_bad;      /* code objects refused: unreadable, not a code object, or over a bound */
	uint64_t codes_evicted;  /* code objects dropped for the bounds */
	uint64_t processes_evicted; /* instances dropped: max_processes */
	uint64_t frames;         /* Python frames symbolized */
	uint64_t frames_unknown; /* Python frames whose code object was bad or dropped with its process */
};

struct python_cache;

struct python_cache *python_cache_new(const struct python_cache_config *config);
void python_cache_free(struct python_cache *c);

/* (pid, instance) runs the interpreter of this layout, PyCode_Type at code_type (0: unknown).
 * 0, or -ENOMEM. */
int python_cache_attach(struct python_cache *c, pid_t pid, uint64_t instance, const struct python_layout *layout,
			uint64_t code_type);
bool python_cache_attached(const struct python_cache *c, pid_t pid, uint64_t instance);
/* Drop what is kept for (pid, instance); instance 0: every instance of pid. */
void python_cache_forget(struct python_cache *c, pid_t pid, uint64_t instance);

/*
 * The frame address of a frame of (pid, instance) with this code object and instruction pointer (as
 * the frame held them), reading the code object when it is not cached: 0, -ENOENT (instance not
 * attached) or -EINVAL (the code object is bad: the frame is best left out).
 */
int python_cache_frame_address(struct python_cache *c, pid_t pid, uint64_t instance, uint64_t code, uint64_t instr,
			       uint64_t *address);
/* The code object and line of a frame address: 0, or -ENOENT (not cached, or bad). */
int python_cache_lookup(struct python_cache *c, pid_t pid, uint64_t instance, uint64_t address,
			const struct python_code **code, uint32_t *line);

const struct python_cache_stats *python_cache_stats(const struct python_cache *c);

/* Frame addresses: 0b110 in bits 61-63 (no user or kernel address has them), the code object's
 * address / 8 in bits 17-60, lasti in bits 1-16, bit 0 clear. A caller that took 1 off (as for a
 * return address) is forgiven: the bit is added back. */
#define PYTHON_FRAME_TAG 6u
static inline bool python_frame_address_is(uint64_t address)
{
	address += address & 1;
	return (address >> 61) == PYTHON_FRAME_TAG;
}

static inline uint64_t python_frame_address(uint64_t code, uint32_t lasti)
{
	if (lasti > PYTHON_LASTI_MAX)
		lasti = PYTHON_LASTI_MAX;
	return ((uint64_t)PYTHON_FRAME_TAG << 61) | (((code >> 3) & ((1ull << 44) - 1)) << 17) | ((uint64_t)lasti << 1);
}

static inline void python_frame_address_decode(uint64_t address, uint64_t *code, uint32_t *lasti)
{
	address += address & 1;
	*code = ((address >> 17) & ((1ull << 44) - 1)) << 3;
	*lasti = (uint32_t)((address >> 1) & PYTHON_LASTI_MAX);
}

#endif
