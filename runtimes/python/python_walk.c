// SPDX-License-Identifier: Apache-2.0
#include "python_walk.h"

#include <bpf/libbpf.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "profile.skel.h"

static const char *const form_names[PYTHON_WALK_FORMS] = {
	[PYTHON_WALK_OFF] = "off", [PYTHON_WALK_BOUNDED] = "bounded", [PYTHON_WALK_LOOP] = "loop",
};

const char *python_walk_form_name(enum python_walk_form form)
{
	return form < PYTHON_WALK_FORMS ? form_names[form] : "?";
}

/* OTELPROFD_PYTHON_WALK's form, or PYTHON_WALK_FORMS when unset (or unknown: said once). */
static enum python_walk_form forced_form(void)
{
	const char *v = getenv("OTELPROFD_PYTHON_WALK");

	if (!v || !*v)
		return PYTHON_WALK_FORMS;
	for (int f = 0; f < PYTHON_WALK_FORMS; f++)
		if (!strcmp(v, form_names[f]))
			return f;
	log_warn("Ignoring OTELPROFD_PYTHON_WALK=%.32s: it takes loop, bounded or off", v);
	return PYTHON_WALK_FORMS;
}

enum python_walk_form python_walk_choose(bool wanted)
{
	enum python_walk_form forced = forced_form();

	if (!wanted)
		return PYTHON_WALK_OFF;
	if (forced != PYTHON_WALK_FORMS) {
		log_info("Python frame walk: %s (OTELPROFD_PYTHON_WALK)", form_names[forced]);
		return forced;
	}
	/* 1: the kernel has the helper (5.17+); 0 or -errno: it has not, or cannot say. */
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL) == 1)
		return PYTHON_WALK_LOOP;
	log_info("Python frame walk: bounded (the kernel has no bpf_loop(), Linux 5.17+: the verifier's "
		 "work at start is larger)");
	return PYTHON_WALK_BOUNDED;
}

void python_walk_configure(struct profile_bpf *skel, enum python_walk_form form)
{
	/* Neither form is loaded with the main programs: the walk is loaded at the first Python
	 * process (daemon/sampling/runtime_bpf.h). */
	skel->rodata->python_frames = form != PYTHON_WALK_OFF;
	bpf_program__set_autoload(skel->progs.py_walk_loop, false);
	bpf_program__set_autoload(skel->progs.py_walk_bounded, false);
}

const char *python_walk_program(enum python_walk_form form)
{
	return form == PYTHON_WALK_LOOP ? "py_walk_loop" : form == PYTHON_WALK_BOUNDED ? "py_walk_bounded" : NULL;
}
