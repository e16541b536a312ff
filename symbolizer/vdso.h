/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The vDSO (`[vdso]` in /proc/PID/maps: clock_gettime, gettimeofday, time, getcpu... run without
 * entering the kernel) has no file, but its ELF image is the same for every native process of one
 * kernel: the calling process's own copy (at getauxval(AT_SYSINFO_EHDR)) serves every process's
 * [vdso] mapping, at that process's base. Its symbols name the frames (__vdso_clock_gettime) and its
 * .eh_frame unwinds them to their callers.
 */
#ifndef OTELPROF_VDSO_H
#define OTELPROF_VDSO_H

#include <stddef.h>

/* Largest vDSO image taken (x86-64's is two pages). */
#define VDSO_MAX_BYTES (64 * 1024)

/* The name /proc/PID/maps gives the mapping. */
#define VDSO_MAP_NAME "[vdso]"

/*
 * A sealed memory file holding this process's vDSO image (the whole [vdso] mapping); its size in
 * *size. The caller closes it. -ENOENT when the process has no vDSO, -EFBIG when it is over
 * VDSO_MAX_BYTES, another -errno from the system calls.
 */
int vdso_image_fd(size_t *size);

#endif
