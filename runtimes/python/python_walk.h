/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which form of the BPF Python frame walk to load (docs/python.md). on_cpu_sample tail-calls the walk
 * for Python processes; the walk has two forms in bpf/profile.bpf.c: with bpf_loop() (Linux 5.17+,
 * cheap to verify) and with bounded loops (any kernel from 5.8, about 50,000 instructions for the
 * verifier). The kernel's support for bpf_loop() chooses; OTELPROFD_PYTHON_WALK=loop|bounded|off in
 * the environment forces a form (tests of the older kernels' form on a new one). The walk is loaded
 * at the first Python process, not at start (daemon/sampling/runtime_bpf.h); when the kernel
 * refuses it, Python processes keep native frames only, said once.
 */
#ifndef OTELPROFD_PYTHON_WALK_H
#define OTELPROFD_PYTHON_WALK_H

#include <stdbool.h>

enum python_walk_form {
	PYTHON_WALK_OFF,     /* no walk: Python processes get native frames */
	PYTHON_WALK_BOUNDED, /* py_walk_bounded */
	PYTHON_WALK_LOOP,    /* py_walk_loop */
	PYTHON_WALK_FORMS,
};

/* "off", "bounded", "loop". */
const char *python_walk_form_name(enum python_walk_form form);

struct profile_bpf;

/* The form to load: off when Python frames are not wanted, else as the environment forces or the
 * kernel allows (probes the kernel for bpf_loop()). */
enum python_walk_form python_walk_choose(bool wanted);
/* Before the main load: tell on_cpu_sample whether to call the walk (neither form is loaded with it). */
void python_walk_configure(struct profile_bpf *skel, enum python_walk_form form);
/* The program of form, loaded at the first Python process (daemon/sampling/runtime_bpf.h); NULL for off. */
const char *python_walk_program(enum python_walk_form form);

#endif
