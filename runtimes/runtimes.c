// SPDX-License-Identifier: Apache-2.0
/* The rooms the record path calls, in this order (runtime.h): a new runtime is one more line. */
#include <errno.h>
#include <stdlib.h>

#include "runtime.h"

const struct runtime_ops *const runtime_rooms[] = {
	&python_runtime, /* runtimes/python: CPython frames (BPF walk, code objects) */
	&jvm_runtime,    /* runtimes/jvm: HotSpot perf maps through the attach thread */
	&go_runtime,     /* runtimes/go: goroutine labels (BPF reader); Go unwinding is the symbolizer's */
};
const size_t runtime_room_count = sizeof(runtime_rooms) / sizeof(runtime_rooms[0]);

int runtime_room_alloc(bool wanted, size_t size, void **room)
{
	*room = wanted ? calloc(1, size) : NULL;
	return wanted && !*room ? -ENOMEM : 0;
}
