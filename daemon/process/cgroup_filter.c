// SPDX-License-Identifier: Apache-2.0
#include "process/cgroup_filter.h"

#include <errno.h>
#include <string.h>

#include "log.h"
#include "process/cgroup.h"

int cgroup_filter_resolve(const char *cgroup, const char *container, uint64_t *ids, size_t max, size_t *n)
{
	const char *root = cgroup_v2_root();
	size_t found = 0;
	int r;

	*n = 0;
	if (!cgroup && !container)
		return 0;
	if (!root) {
		log_error("--cgroup and --container need the cgroup v2 hierarchy, which is not mounted");
		return -ENOENT;
	}
	if (cgroup) {
		r = cgroup_id_of_path(root, cgroup, &ids[(*n)++]);
		if (r) {
			log_error("--cgroup: %s is not a cgroup under %s: %s", cgroup, root, strerror(-r));
			return r;
		}
	}
	if (container) {
		r = cgroup_find_container(root, container, ids + *n, max - *n, &found);
		if (r) {
			log_error("--container: failed to search %s: %s", root, strerror(-r));
			return r;
		}
		if (!found) {
			log_error("--container: no cgroup under %s belongs to container %s", root, container);
			return -ENOENT;
		}
		if (found > max - *n) {
			log_error("--container: %s matches %zu cgroups, more than %zu: give more of the id",
				  container, found, max - *n);
			return -E2BIG;
		}
		*n += found;
	}
	return 0;
}
