// SPDX-License-Identifier: Apache-2.0
/*
 * cgroup path parsing from /proc/PID/cgroup files as each container runtime and layout writes them
 * (Docker, containerd plain and under Kubernetes, CRI-O, Podman; cgroup v1, v2 and hybrid; systemd
 * and cgroupfs drivers).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "process/cgroup.h"

#define ID "3f1e5a7c9b2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f"
#define UID "1b2c3d4e-5f60-4a1b-8c2d-3e4f5a6b7c8d"
#define UID_ "1b2c3d4e_5f60_4a1b_8c2d_3e4f5a6b7c8d"

struct cgroup_case {
	const char *name;
	const char *text;
	const char *container_id;
	const char *pod_uid;
	const char *unit;
	enum cgroup_runtime runtime;
};

static const struct cgroup_case cases[] = {
	{ "docker v2 systemd", "0::/system.slice/docker-" ID ".scope\n", ID, "", "", CGROUP_RUNTIME_DOCKER },
	{ "docker v2 cgroupfs", "0::/docker/" ID "\n", ID, "", "", CGROUP_RUNTIME_DOCKER },
	{ "docker v1 cgroupfs",
	  "12:pids:/docker/" ID "\n11:memory:/docker/" ID "\n1:name=systemd:/docker/" ID "\n0::/\n",
	  ID, "", "", CGROUP_RUNTIME_DOCKER },
	{ "docker v1 systemd",
	  "11:cpu,cpuacct:/system.slice/docker-" ID ".scope\n1:name=systemd:/system.slice/docker-" ID ".scope\n",
	  ID, "", "", CGROUP_RUNTIME_DOCKER },
	{ "containerd k8s v2 systemd",
	  "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/cri-containerd-" ID ".scope\n",
	  ID, UID, "", CGROUP_RUNTIME_CONTAINERD },
	{ "containerd k8s v2 cgroupfs", "0::/kubepods/burstable/pod" UID "/" ID "\n", ID, UID, "", CGROUP_RUNTIME_UNKNOWN },
	{ "containerd k8s guaranteed v2 systemd",
	  "0::/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope\n", ID, UID, "",
	  CGROUP_RUNTIME_CONTAINERD },
	{ "containerd k8s v1 cgroupfs",
	  "10:memory:/kubepods/besteffort/pod" UID "/" ID "\n1:name=systemd:/kubepods/besteffort/pod" UID "/" ID "\n",
	  ID, UID, "", CGROUP_RUNTIME_UNKNOWN },
	{ "containerd plain (nerdctl) v2", "0::/system.slice/containerd-" ID ".scope\n", ID, "", "",
	  CGROUP_RUNTIME_CONTAINERD },
	{ "containerd cgroupfs namespace", "0::/default/" ID "\n", ID, "", "", CGROUP_RUNTIME_UNKNOWN },
	{ "cri-o k8s v2 systemd",
	  "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/crio-" ID ".scope\n",
	  ID, UID, "", CGROUP_RUNTIME_CRIO },
	{ "cri-o k8s v1 cgroupfs", "4:cpu:/kubepods/besteffort/pod" UID "/crio-" ID "\n", ID, UID, "", CGROUP_RUNTIME_CRIO },
	{ "cri-o conmon is no container",
	  "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/crio-conmon-" ID ".scope\n",
	  "", UID, "", CGROUP_RUNTIME_NONE },
	{ "podman v2 systemd", "0::/machine.slice/libpod-" ID ".scope\n", ID, "", "", CGROUP_RUNTIME_PODMAN },
	{ "podman v2 nested container cgroup", "0::/machine.slice/libpod-" ID ".scope/container\n", ID, "", "",
	  CGROUP_RUNTIME_PODMAN },
	{ "podman rootless",
	  "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope\n", ID, "",
	  "user@1000.service", CGROUP_RUNTIME_PODMAN },
	{ "podman cgroupfs", "0::/libpod_parent/libpod-" ID "\n", ID, "", "", CGROUP_RUNTIME_PODMAN },
	/* conmon runs in a unit of its own, outside the container. */
	{ "podman conmon", "0::/machine.slice/libpod-conmon-" ID ".scope\n", "", "", "libpod-conmon-" ID ".scope",
	  CGROUP_RUNTIME_NONE },
	{ "docker under k8s systemd (dockershim)",
	  "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/docker-" ID ".scope\n",
	  ID, UID, "", CGROUP_RUNTIME_DOCKER },
	{ "pod sandbox cgroup without container", "0::/kubepods/burstable/pod" UID "\n", "", UID, "", CGROUP_RUNTIME_NONE },
	{ "systemd service v2", "0::/system.slice/nginx.service\n", "", "", "nginx.service", CGROUP_RUNTIME_NONE },
	{ "systemd service sub-cgroup", "0::/system.slice/app.service/worker\n", "", "", "app.service", CGROUP_RUNTIME_NONE },
	{ "systemd user service",
	  "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-foo.service\n", "", "", "app-foo.service",
	  CGROUP_RUNTIME_NONE },
	{ "systemd session scope", "0::/user.slice/user-0.slice/session-3.scope\n", "", "", "session-3.scope",
	  CGROUP_RUNTIME_NONE },
	{ "systemd v1 service",
	  "12:memory:/system.slice/cron.service\n1:name=systemd:/system.slice/cron.service\n", "", "", "cron.service",
	  CGROUP_RUNTIME_NONE },
	{ "hybrid: unified line empty, v1 names it",
	  "7:memory:/system.slice/docker-" ID ".scope\n1:name=systemd:/system.slice/docker-" ID ".scope\n0::/\n",
	  ID, "", "", CGROUP_RUNTIME_DOCKER },
	{ "other cgroup namespace (relative path)", "0::/../../kubepods/burstable/pod" UID "/" ID "\n", ID, UID, "",
	  CGROUP_RUNTIME_UNKNOWN },
	{ "uppercase hex normalised", "0::/docker/3F1E5A7C9B2D4E6F8A0B1C2D3E4F5A6B7C8D9E0F1A2B3C4D5E6F7A8B9C0D1E2F\n",
	  ID, "", "", CGROUP_RUNTIME_DOCKER },
	{ "root cgroup", "0::/\n", "", "", "", CGROUP_RUNTIME_NONE },
	{ "init scope", "0::/init.scope\n", "", "", "init.scope", CGROUP_RUNTIME_NONE },
	{ "63 hex digits are no id", "0::/docker/" "3f1e5a7c9b2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2" "\n",
	  "", "", "", CGROUP_RUNTIME_NONE },
	{ "id glued to a word is no id", "0::/system.slice/foo" ID ".scope\n", "", "", "foo" ID ".scope",
	  CGROUP_RUNTIME_NONE },
	{ "pod uid outside kubepods ignored", "0::/pod" UID "/x\n", "", "", "", CGROUP_RUNTIME_NONE },
	{ "malformed lines", "garbage\n::\n:\n\n0:", "", "", "", CGROUP_RUNTIME_NONE },
	{ "empty", "", "", "", "", CGROUP_RUNTIME_NONE },
	{ "no trailing newline", "0::/system.slice/crio-" ID ".scope", ID, "", "", CGROUP_RUNTIME_CRIO },
};

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct cgroup_case *c = &cases[i];
		struct cgroup_info info;

		cgroup_parse(c->text, &info);
		if (strcmp(info.container_id, c->container_id) || strcmp(info.pod_uid, c->pod_uid) ||
		    strcmp(info.systemd_unit, c->unit) || info.runtime != c->runtime)
			fail_msg("%s: got id '%s' pod '%s' unit '%s' runtime %s", c->name, info.container_id,
				 info.pod_uid, info.systemd_unit, cgroup_runtime_name(info.runtime));
	}
}

static void test_component(void **state)
{
	char id[CGROUP_CONTAINER_ID_LEN + 1];
	enum cgroup_runtime rt;

	(void)state;
	assert_true(cgroup_component_container_id("crio-" ID ".scope", strlen("crio-" ID ".scope"), id, &rt));
	assert_string_equal(id, ID);
	assert_int_equal(rt, CGROUP_RUNTIME_CRIO);
	assert_true(cgroup_component_container_id("x:cri-containerd:" ID, strlen("x:cri-containerd:" ID), id, &rt));
	assert_int_equal(rt, CGROUP_RUNTIME_CONTAINERD);
	assert_false(cgroup_component_container_id("crio-conmon-" ID, strlen("crio-conmon-" ID), id, &rt));
	assert_false(cgroup_component_container_id("", 0, id, &rt));
	assert_false(cgroup_component_container_id(".scope", 6, id, &rt));
}

static void test_read_self(void **state)
{
	struct cgroup_info info;

	(void)state;
	assert_int_equal(cgroup_read_pid(getpid(), &info), 0);
	assert_int_equal(cgroup_read_pid(-5, &info) < 0, 1);
}

static void test_find_container_bad_ids(void **state)
{
	uint64_t ids[4];
	size_t n;

	(void)state;
	assert_int_equal(cgroup_find_container("/sys/fs/cgroup", "abc", ids, 4, &n), -EINVAL);
	assert_int_equal(cgroup_find_container("/sys/fs/cgroup", "zzzzzzzzzzzzzz", ids, 4, &n), -EINVAL);
	assert_int_equal(cgroup_find_container("/nonexistent-dir", ID, ids, 4, &n), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_component),
		cmocka_unit_test(test_read_self),
		cmocka_unit_test(test_find_container_bad_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
