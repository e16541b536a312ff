// SPDX-License-Identifier: Apache-2.0
#include "process/describe.h"

#include <stdbool.h>
#include <string.h>

#include "process/k8s.h"
#include "process/metadata.h"
#include "process/process_table.h"
#include "process/trace_table.h"

void process_describe(void *ctx, struct profile *p, uint32_t process)
{
	struct process_describer *d = ctx;
	const struct pf_process *proc = &p->processes[process];
	const struct process_info *pi = process_table_find_instance(d->processes, proc->pid, proc->start_ns,
								      proc->instance);
	struct k8s_pod_names names;
	bool named = d->k8s && pi && k8s_lookup(d->k8s, pi->cgroup.pod_uid, pi->cgroup.container_id, &names);
	const struct process_ctx *pc = d->traces ? trace_table_context(d->traces, proc->pid, proc->instance) : NULL;

	/* What the process publishes about itself (OTEP 4719) comes first and wins over what is detected. */
	for (size_t i = 0; pc && i < pc->nattrs; i++)
		if (strcmp(pc->attrs[i].key, "process.pid"))
			profile_add_process_attribute_string(p, process, pc->attrs[i].key, pc->attrs[i].value);

	metadata_describe(d->metadata, pi, named ? &(struct k8s_names){
		.pod_name = names.pod_name, .namespace_name = names.namespace_name,
		.container_name = names.container_name,
	} : NULL, p, process);
}
