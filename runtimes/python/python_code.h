/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPython code objects read from another process's memory: qualified name, file name, first line
 * and line table (co_linetable, the location table of PEP 626 as 3.11-3.13 write it), and the line
 * of an instruction. Memory is read through a callback, so tests supply a fake process image.
 * Everything read is treated as hostile: lengths are bounded, strings must be compact str objects,
 * the code object's type must be PyCode_Type when its address is known.
 */
#ifndef OTELPROF_PYTHON_CODE_H
#define OTELPROF_PYTHON_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python_layout.h"

/* Bounds on what one code object may bring: characters of a name or file, bytes of line table. */
#define PYTHON_MAX_NAME 256
#define PYTHON_MAX_FILE 1024
#define PYTHON_MAX_LINETABLE (256 * 1024)

/* Read len bytes at address of pid into buf: 0, or -errno (a short read is an error). */
typedef int (*python_read_fn)(void *ctx, pid_t pid, uint64_t address, void *buf, size_t len);

/* What a code object names. One allocation: free(code) frees the strings and the table too. */
struct python_code {
	const char *qualname;   /* co_qualname, UTF-8, cut at PYTHON_MAX_NAME characters */
	const char *filename;   /* co_filename, UTF-8, cut at PYTHON_MAX_FILE characters */
	const uint8_t *linetable; /* co_linetable bytes */
	uint32_t linetable_len;
	uint32_t firstlineno;   /* co_firstlineno */
	size_t bytes;           /* of the allocation */
};

/* Read the code object at address: 0 and *out (caller frees), or -EFAULT (unreadable), -EINVAL
 * (not a code object this reader accepts), -ENOMEM. code_type: the address of PyCode_Type, or 0. */
int python_code_read(const struct python_layout *l, python_read_fn read, void *ctx, pid_t pid, uint64_t address,
		     uint64_t code_type, struct python_code **out);

/* The line of instruction lasti (in 2-byte code units) from the line table, 0 when it has none. */
uint32_t python_code_line(const struct python_code *code, uint32_t lasti);

/* process_vm_readv(), as a python_read_fn (ctx unused). */
int python_read_process(void *ctx, pid_t pid, uint64_t address, void *buf, size_t len);

#endif
