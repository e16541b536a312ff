// SPDX-License-Identifier: Apache-2.0
/* A process whose samples are nearly all kernel frames (a system call in a loop), linked statically
 * without debug information: profiling it costs the kallsyms read and almost no user-space
 * symbolizing (bench/startup_cpu.py --workload, the start-up with kernel frames). */
#include <unistd.h>

int main(void)
{
	for (;;)
		(void)getppid();
}
