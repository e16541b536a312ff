/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which form of the BPF Python frame walk to load (docs/python.md). on_cpu_sample tail-calls the walk
 * for Python processes; the walk has two forms in bpf/profile.bpf.c: with bpf_loop() (Linux 5.17+,
 * cheap to verify) and with bounded loops (any kernel from 5.8, about 50,000 instructions for the
 * verifier). The kernel's support for bpf_loop() chooses; OTELPROFD_PYTHON_WALK=loop|bounded|off in
 * the environment forces a form (tests of the older kernels' form on a new one). When the kernel
 * refuses the walk, the sampler loads again without it (sampler.c): native frames only, said once.
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
/* Before the load: load form's program (none for off) and tell on_cpu_sample whether to call it. */
void python_walk_configure(struct profile_bpf *skel, enum python_walk_form form);
/* After the load: put the loaded walk where on_cpu_sample tail-calls it. 0 or -errno (logged). */
int python_walk_install(struct profile_bpf *skel, enum python_walk_form form);

#endif
