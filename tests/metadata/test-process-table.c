// SPDX-License-Identifier: Apache-2.0
/*
 * The process table: (pid, start time) keys so a reused pid never mixes two processes, fork
 * inheritance, exec re-reading, the bound with eviction, sweeping exited processes; and the resource
 * attributes built from an entry (service.name precedence, OTEL_RESOURCE_ATTRIBUTES merge).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/cgroup_ids.h"
#include "process/metadata.h"
#include "process/process_table.h"

static uint64_t self_start(void)
{
	uint64_t ns = 0;

	assert_int_equal(process_start_ns("/proc", (uint32_t)getpid(), &ns), 0);
	return ns;
}

static void test_sample_reads_proc(void **state)
{
	struct process_table *t = process_table_new(&(struct process_table_config){ .command_line = true });
	const struct process_info *pi;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	(void)state;
	assert_true(n > 0);
	exe[n] = 0;
	setenv("OTEL_SERVICE_NAME", "unit-svc", 1);
	pi = process_table_sample(t, (uint32_t)getpid(), self_start(), "me", 0, 0);
	assert_non_null(pi);
	assert_string_equal(pi->exe_path, exe);
	/* /proc/PID/environ is the environment at exec: setenv() after it is not seen. */
	assert_non_null(pi->command_line);
	assert_int_equal(pi->samples, 1);
	assert_int_equal(process_table_sample(t, (uint32_t)getpid(), self_start(), "me", 0, 0)->samples, 2);
	/* The same pid with another start time is another process, and that one is gone. */
	assert_null(process_table_sample(t, (uint32_t)getpid(), self_start() + 5000000000ULL, "me", 0, 0));
	assert_int_equal(process_table_counters(t)->no_process, 1);
	assert_int_equal(process_table_count(t), 1);
	process_table_free(t);
}

static void test_pid_reuse_fork_exec_exit(void **state)
{
	struct process_table *t = process_table_new(&(struct process_table_config){ 0 });
	const struct process_info *a, *b;

	(void)state;
	/* Made-up pids far above pid_max: /proc has nothing, records are all there is. */
	assert_int_equal(process_table_exec(t, 900000001, 100, "parent", "/usr/bin/parent", 0, 0), 0);
	assert_int_equal(process_table_fork(t, 900000002, 200, 900000001, 100, "child", 0, 0), 0);
	a = process_table_find(t, 900000002, 200);
	assert_non_null(a);
	assert_string_equal(a->exe_path, "/usr/bin/parent"); /* inherited at fork */
	assert_int_equal(process_table_exec(t, 900000002, 200, "child", "/usr/bin/child", 0, 0), 0);
	assert_string_equal(process_table_find(t, 900000002, 200)->exe_path, "/usr/bin/child");
	process_table_exit(t, 900000002, 200);
	/* The pid is reused by a new process: a second entry, the first one untouched. */
	assert_int_equal(process_table_exec(t, 900000002, 300, "other", "/usr/bin/other", 0, 0), 0);
	a = process_table_find(t, 900000002, 200);
	b = process_table_find(t, 900000002, 300);
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(a->exe_path, "/usr/bin/child");
	assert_string_equal(b->exe_path, "/usr/bin/other");
	assert_true(a->exited);
	assert_false(b->exited);
	/* Sweeping drops only the exited one (and the child's instance from before its exec). */
	process_table_sweep(t, NULL, NULL);
	assert_null(process_table_find(t, 900000002, 200));
	assert_non_null(process_table_find(t, 900000002, 300));
	assert_int_equal(process_table_counters(t)->removed, 2);
	process_table_free(t);
}

static void count_forget(void *ctx, uint32_t pid, uint64_t instance)
{
	(void)pid;
	(void)instance;
	(*(unsigned *)ctx)++;
}

struct forgotten {
	uint32_t pid[8];
	uint64_t instance[8];
	unsigned n;
};

static void record_forget(void *ctx, uint32_t pid, uint64_t instance)
{
	struct forgotten *f = ctx;

	if (f->n < 8) {
		f->pid[f->n] = pid;
		f->instance[f->n++] = instance;
	}
}

/*
 * An exec makes a new instance: the old program's entry (executable, attributes) stays findable by
 * its instance until the sweep, for the samples it took before the exec; a sweep reports each
 * instance it drops, so the symbolizer frees exactly that one's mappings.
 */
static void test_exec_keeps_old_instance(void **state)
{
	struct process_table *t = process_table_new(&(struct process_table_config){ 0 });
	struct forgotten f = { .n = 0 };
	const struct process_info *pi;
	uint64_t before, after;

	(void)state;
	assert_int_equal(process_table_exec(t, 900000400, 100, "shell", "/bin/sh", 0, 0), 0);
	pi = process_table_find(t, 900000400, 100);
	assert_non_null(pi);
	before = pi->instance;
	assert_true(before != 0);
	assert_int_equal(process_table_exec(t, 900000400, 100, "worker", "/usr/bin/worker", 0, 0), 0);
	pi = process_table_find(t, 900000400, 100);
	after = pi->instance;
	assert_true(after != before);
	assert_string_equal(pi->exe_path, "/usr/bin/worker");
	assert_false(pi->exited);
	pi = process_table_find_instance(t, 900000400, 100, before);
	assert_non_null(pi);
	assert_string_equal(pi->exe_path, "/bin/sh");
	assert_string_equal(pi->comm, "shell");
	assert_true(pi->exited);
	/* A reused pid is another key and another instance. */
	assert_int_equal(process_table_fork(t, 900000401, 300, 900000400, 100, "child", 0, 0), 0);
	process_table_exit(t, 900000401, 300);
	assert_int_equal(process_table_exec(t, 900000401, 400, "reuser", "/usr/bin/reuser", 0, 0), 0);
	assert_true(process_table_find(t, 900000401, 400)->instance != process_table_find(t, 900000401, 300)->instance);
	assert_string_equal(process_table_find(t, 900000401, 300)->exe_path, "/usr/bin/worker");
	assert_string_equal(process_table_find(t, 900000401, 400)->exe_path, "/usr/bin/reuser");
	/* The sweep drops the old program and the exited child, not the running ones. */
	process_table_sweep(t, record_forget, &f);
	assert_int_equal(f.n, 2);
	assert_int_equal(f.pid[0], 900000400);
	assert_int_equal(f.instance[0], before);
	assert_int_equal(f.pid[1], 900000401);
	assert_null(process_table_find_instance(t, 900000400, 100, before));
	assert_non_null(process_table_find_instance(t, 900000400, 100, after));
	assert_non_null(process_table_find(t, 900000401, 400));
	process_table_free(t);
}

/* Ended instances without samples go at any time; those with samples wait for the full sweep. */
static void test_sweep_unsampled(void **state)
{
	struct process_table *t = process_table_new(&(struct process_table_config){ 0 });
	uint64_t start = self_start();
	unsigned forgotten = 0;

	(void)state;
	process_table_exec(t, 900000500, 1, "a", "/bin/a", 0, 0);
	process_table_exit(t, 900000500, 1);
	/* This process, sampled, then marked exited (as after its exit record). */
	assert_non_null(process_table_sample(t, (uint32_t)getpid(), start, "me", 0, 0));
	process_table_exit(t, (uint32_t)getpid(), start);
	process_table_sweep_unsampled(t, count_forget, &forgotten);
	assert_int_equal(forgotten, 1);
	assert_null(process_table_find(t, 900000500, 1));
	assert_non_null(process_table_find(t, (uint32_t)getpid(), start));
	process_table_sweep(t, count_forget, &forgotten);
	assert_int_equal(forgotten, 2);
	assert_int_equal(process_table_count(t), 0);
	process_table_free(t);
}

/* An interval set aside to be built in slices (process_table_seal()): the sweep after its build
 * drops what ended before the seal, not what ended while it was built (samples of the next one). */
static void test_sweep_sealed(void **state)
{
	struct process_table *t = process_table_new(&(struct process_table_config){ 0 });
	unsigned forgotten = 0;

	(void)state;
	process_table_exec(t, 900000600, 1, "a", "/bin/a", 0, 0);
	process_table_exec(t, 900000601, 1, "b", "/bin/b", 0, 0);
	process_table_exit(t, 900000600, 1);
	process_table_seal(t);
	process_table_exit(t, 900000601, 1); /* while the sealed interval is built */
	process_table_sweep(t, count_forget, &forgotten);
	assert_int_equal(forgotten, 1);
	assert_null(process_table_find(t, 900000600, 1));
	assert_non_null(process_table_find(t, 900000601, 1));
	process_table_seal(t);
	process_table_sweep(t, count_forget, &forgotten);
	assert_int_equal(forgotten, 2);
	assert_int_equal(process_table_count(t), 0);
	process_table_free(t);
}

static void test_bound_evicts_least_recent(void **state)
{
	unsigned forgotten = 0, evicted = 0;
	struct process_table *t = process_table_new(&(struct process_table_config){
		.max_processes = 4, .evicted = count_forget, .evicted_ctx = &evicted,
	});

	(void)state;
	for (uint32_t i = 0; i < 4; i++)
		process_table_exec(t, 900000100 + i, 1, "p", "/bin/p", 0, 0);
	/* Exec the oldest again: its old program's entry is now the least recent and goes first, then
	 * the second oldest. */
	process_table_exec(t, 900000100, 1, "p", "/bin/p", 0, 0);
	process_table_exec(t, 900000200, 1, "q", "/bin/q", 0, 0);
	assert_int_equal(process_table_count(t), 4);
	assert_int_equal(process_table_counters(t)->evicted, 2);
	assert_int_equal(evicted, 2);
	assert_non_null(process_table_find(t, 900000100, 1));
	assert_null(process_table_find(t, 900000101, 1));
	process_table_exit(t, 900000100, 1);
	process_table_exit(t, 900000200, 1);
	process_table_sweep(t, count_forget, &forgotten);
	assert_int_equal(forgotten, 2);
	assert_int_equal(process_table_count(t), 2);
	process_table_free(t);
}

#define CTR "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define POD "0b5e8f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
#define RUNTIME_CG "/system.slice/containerd.service"
#define CONTAINER_CG "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0b5e8f3a_1c2d_4e5f_8a9b_0c1d2e3f4a5b.slice/cri-containerd-" CTR ".scope"

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* mkdir -p root/path; the inode of the last directory (a cgroup v2 id on the real hierarchy). */
static uint64_t make_dirs(const char *root, const char *path)
{
	char full[4096];
	struct stat st;

	snprintf(full, sizeof(full), "%s%s", root, path);
	for (char *p = full + strlen(root) + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(full, 0755);
			*p = '/';
		}
	mkdir(full, 0755);
	assert_int_equal(stat(full, &st), 0);
	return st.st_ino;
}

/*
 * A short-lived container process: the runtime (in its own service's cgroup) forks a child, moves it
 * into the container's cgroup and the child execs and exits before otelprofd reads /proc. The exec
 * record's cgroup id differs from the inherited one: the cgroup is found by the id (a fake cgroup
 * tree here), not left as the runtime's. An id that names no cgroup drops the inherited cgroup.
 */
static void test_cgroup_by_id(void **state)
{
	char dir[] = "/tmp/otelprofd-cgid-XXXXXX", proc[64], cg[64], pid_dir[128];
	struct process_table *t;
	const struct process_info *pi;
	uint64_t runtime_id, container_id;
	struct cgroup_ids *ids;
	struct cgroup_info info;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(proc, sizeof(proc), "%s/proc", dir);
	snprintf(cg, sizeof(cg), "%s/cgroup", dir);
	mkdir(proc, 0755);
	mkdir(cg, 0755);
	runtime_id = make_dirs(cg, RUNTIME_CG);
	container_id = make_dirs(cg, CONTAINER_CG);
	make_dirs(cg, "/user.slice/user-0.slice/session-1.scope");
	/* The runtime's /proc entry (start time 0 at field 22); its children have none: they are gone. */
	snprintf(pid_dir, sizeof(pid_dir), "%s/900000600", proc);
	mkdir(pid_dir, 0755);
	write_file(pid_dir, "stat", "900000600 (containerd-shim) S 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 0 0 0\n");
	write_file(pid_dir, "cgroup", "0::" RUNTIME_CG "\n");

	t = process_table_new(&(struct process_table_config){ .proc_root = proc, .cgroup_root = cg });
	assert_non_null(t);
	assert_int_equal(process_table_exec(t, 900000600, 0, "containerd-shim", "/usr/bin/containerd-shim", runtime_id, 0), 0);
	pi = process_table_find(t, 900000600, 0);
	assert_true(pi->from_proc);
	assert_string_equal(pi->cgroup.systemd_unit, "containerd.service");
	assert_int_equal(pi->cgroup_id, runtime_id);

	/* Forked in the runtime's cgroup: inherited, nothing to resolve. */
	assert_int_equal(process_table_fork(t, 900000601, 5, 900000600, 0, "runc:[2:INIT]", runtime_id, 0), 0);
	pi = process_table_find(t, 900000601, 5);
	assert_string_equal(pi->cgroup.systemd_unit, "containerd.service");
	assert_string_equal(pi->cgroup.container_id, "");
	/* Exec'd in the container's cgroup, /proc already gone: resolved by id. */
	assert_int_equal(process_table_exec(t, 900000601, 5, "app", "/app", container_id, 0), 0);
	pi = process_table_find(t, 900000601, 5);
	assert_false(pi->from_proc);
	assert_string_equal(pi->cgroup.container_id, CTR);
	assert_string_equal(pi->cgroup.pod_uid, POD);
	assert_string_not_equal(pi->cgroup.systemd_unit, "containerd.service");
	assert_int_equal(pi->cgroup_id, container_id);
	assert_int_equal(process_table_counters(t)->cgroup_resolved, 1);

	/* A sample in another cgroup than the one described (it moved): resolved again. */
	assert_non_null(process_table_sample(t, 900000601, 5, "app", runtime_id, 0));
	assert_string_equal(process_table_find(t, 900000601, 5)->cgroup.systemd_unit, "containerd.service");
	assert_string_equal(process_table_find(t, 900000601, 5)->cgroup.container_id, "");

	/* An id that names no cgroup (removed since): the runtime's cgroup is not kept. */
	assert_int_equal(process_table_fork(t, 900000602, 6, 900000600, 0, "runc:[2:INIT]", runtime_id, 0), 0);
	assert_int_equal(process_table_exec(t, 900000602, 6, "app", "/app", 0xffffffffff00ULL, 0), 0);
	pi = process_table_find(t, 900000602, 6);
	assert_string_equal(pi->cgroup.systemd_unit, "");
	assert_string_equal(pi->cgroup.container_id, "");
	assert_int_equal(process_table_counters(t)->cgroup_unresolved, 1);
	/* The root cgroup (a host that does not use the v2 hierarchy): the inherited cgroup stays. */
	{
		struct stat st;

		assert_int_equal(stat(cg, &st), 0);
		assert_int_equal(process_table_fork(t, 900000603, 7, 900000600, 0, "sh", st.st_ino, 0), 0);
		assert_string_equal(process_table_find(t, 900000603, 7)->cgroup.systemd_unit, "containerd.service");
		assert_int_equal(process_table_counters(t)->cgroup_unresolved, 1);
	}
	process_table_free(t);

	/* The cache: one walk per id, found or not. */
	ids = cgroup_ids_new(cg, 8);
	assert_non_null(ids);
	assert_int_equal(cgroup_ids_lookup(ids, container_id, &info), 0);
	assert_string_equal(info.container_id, CTR);
	assert_int_equal(cgroup_ids_lookup(ids, container_id, &info), 0);
	assert_int_equal(cgroup_ids_lookup(ids, 0xffffffffff00ULL, &info), -ENOENT);
	assert_int_equal(cgroup_ids_lookup(ids, 0xffffffffff00ULL, &info), -ENOENT);
	assert_int_equal(cgroup_ids_counters(ids)->walks, 2);
	assert_int_equal(cgroup_ids_counters(ids)->hits, 2);
	assert_int_equal(cgroup_ids_counters(ids)->not_found, 1);
	/* The root cgroup says nothing: what a process inherited stays (cgroup v1 paths, say). */
	{
		struct stat st;

		assert_int_equal(stat(cg, &st), 0);
		assert_int_equal(cgroup_ids_lookup(ids, st.st_ino, &info), -ENODATA);
	}
	cgroup_ids_free(ids);

	{
		char cmd[4200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		assert_int_equal(system(cmd), 0);
	}
}

static void test_resource_attributes_parse(void **state)
{
	char buf[64];

	(void)state;
	assert_true(resource_attributes_get("a=1, service.name = my%20svc ,b=2", "service.name", buf, sizeof(buf)));
	assert_string_equal(buf, "my svc");
	assert_false(resource_attributes_get("a=1", "service.name", buf, sizeof(buf)));
	assert_false(resource_attributes_get("service.name=bad%zz", "service.name", buf, sizeof(buf)));
	assert_false(resource_attributes_get("service.name=bad%2", "service.name", buf, sizeof(buf)));
	assert_true(resource_attributes_get("x=,service.name=v", "x", buf, sizeof(buf)));
	assert_string_equal(buf, "");
}

static const char *attr(const struct profile *p, uint32_t process, const char *key)
{
	const struct pf_process *proc = &p->processes[process];

	for (uint32_t i = 0; i < proc->nattributes; i++) {
		const struct pf_attribute *a = &p->process_attributes[proc->first_attribute + i];

		if (!strcmp(profile_string(p, a->key), key))
			return profile_string(p, a->string_value);
	}
	return NULL;
}

/* A profile with one process named comm, described from pi and k8s. */
static struct profile *describe(const struct metadata *m, const struct process_info *pi, const struct k8s_names *k8s)
{
	struct agg_limits limits = { 10, 1 << 16, 10 };
	struct aggregate *agg = aggregate_new(&limits);
	struct symbolizer *sym = symbolizer_new(NULL);
	struct otelprof_sample s;
	struct profile *p;

	memset(&s, 0, sizeof(s));
	s.pid = 900000300;
	strcpy(s.process_comm, "comm");
	assert_int_equal(aggregate_add(agg, &s, 1), 0);
	p = profile_build(agg, sym, &(struct profile_build_options){ .frequency = 19 });
	assert_non_null(p);
	assert_int_equal(p->nprocesses, 2);
	metadata_describe(m, pi, k8s, p, 1);
	aggregate_free(agg);
	symbolizer_free(sym);
	return p;
}

static void test_describe(void **state)
{
	struct metadata *m;
	struct process_info pi = { .pid = 900000300, .exe_path = "/usr/sbin/nginx" };
	struct k8s_names k8s = { "web-0", "prod", "nginx-ctr" };
	char id[] = "/tmp/test-machine-idXXXXXX";
	int fd = mkstemp(id);
	struct profile *p;

	(void)state;
	assert_int_equal(write(fd, "abc123\n", 7), 7);
	close(fd);
	m = metadata_new(&(struct metadata_config){
		.machine_id_path = id, .hostname = "h1", .node_name = "node-7",
		.resource_attributes = "deployment.environment=prod,host.name=override,service.name=ignored,broken",
	});
	assert_non_null(m);
	assert_int_equal(metadata_skipped_resource_attributes(m), 1);

	/* Executable name last. */
	p = describe(m, &pi, NULL);
	assert_string_equal(attr(p, 1, "service.name"), "nginx");
	assert_string_equal(attr(p, 1, "process.executable.name"), "nginx");
	assert_string_equal(attr(p, 1, "host.name"), "override");
	assert_string_equal(attr(p, 1, "host.id"), "abc123");
	assert_string_equal(attr(p, 1, "k8s.node.name"), "node-7");
	assert_string_equal(attr(p, 1, "deployment.environment"), "prod");
	assert_null(attr(p, 1, "container.id"));
	assert_null(attr(p, 1, "process.command_line"));
	profile_free(p);

	/* The systemd unit before it. */
	strcpy(pi.cgroup.systemd_unit, "web.service");
	p = describe(m, &pi, NULL);
	assert_string_equal(attr(p, 1, "service.name"), "web");
	assert_string_equal(attr(p, 1, "systemd.unit"), "web.service");
	profile_free(p);

	/* The Kubernetes container name before that. */
	strcpy(pi.cgroup.container_id, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	strcpy(pi.cgroup.pod_uid, "0b5e8f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b");
	p = describe(m, &pi, &k8s);
	assert_string_equal(attr(p, 1, "service.name"), "nginx-ctr");
	assert_string_equal(attr(p, 1, "k8s.pod.name"), "web-0");
	assert_string_equal(attr(p, 1, "k8s.namespace.name"), "prod");
	assert_string_equal(attr(p, 1, "k8s.pod.uid"), "0b5e8f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b");
	assert_string_equal(attr(p, 1, "container.id"), pi.cgroup.container_id);
	profile_free(p);

	/* The process's own OTEL_SERVICE_NAME first. */
	pi.service_name = "checkout";
	p = describe(m, &pi, &k8s);
	assert_string_equal(attr(p, 1, "service.name"), "checkout");
	profile_free(p);

	/* Nothing known: the comm. */
	p = describe(m, NULL, NULL);
	assert_string_equal(attr(p, 1, "service.name"), "comm");
	assert_string_equal(attr(p, 1, "process.executable.name"), "comm");
	profile_free(p);

	metadata_free(m);
	unlink(id);
}

/* A fake /proc whose pid 1 is the host seen from a hostPID pod: its own UTS namespace and root. */
static void test_host_facts_from_pid1(void **state)
{
	char root[] = "/tmp/test-host-procXXXXXX", path[512], own_host[256], own_id[128] = "";
	struct process_info pi = { .pid = 900000300, .exe_path = "/usr/bin/app" };
	struct metadata *m;
	struct profile *p;
	FILE *f;

	(void)state;
	unsetenv("K8S_NODE_NAME");
	unsetenv("NODE_NAME");
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "mkdir -p %s/self/ns %s/1/ns %s/1/root/etc", root, root, root);
	assert_int_equal(system(path), 0);
	write_file(root, "self/ns/uts", "pod\n");
	write_file(root, "1/ns/uts", "host\n");
	write_file(root, "1/root/etc/hostname", "# hostname(5) allows comments\n\n  node-a.example  \n");
	write_file(root, "1/root/etc/machine-id", "0123456789abcdef0123456789abcdef\n");
	assert_int_equal(gethostname(own_host, sizeof(own_host)), 0);

	/* Another UTS namespace than pid 1's: the host's /etc/hostname and machine id. */
	m = metadata_new(&(struct metadata_config){ .proc_root = root, .resource_attributes = "" });
	p = describe(m, &pi, NULL);
	assert_string_equal(attr(p, 1, "host.name"), "node-a.example");
	assert_string_equal(attr(p, 1, "host.id"), "0123456789abcdef0123456789abcdef");
	profile_free(p);
	metadata_free(m);

	/* The downward API's node name before pid 1's /etc/hostname. */
	m = metadata_new(&(struct metadata_config){ .proc_root = root, .resource_attributes = "", .node_name = "node-7" });
	p = describe(m, &pi, NULL);
	assert_string_equal(attr(p, 1, "host.name"), "node-7");
	assert_string_equal(attr(p, 1, "k8s.node.name"), "node-7");
	profile_free(p);
	metadata_free(m);

	/* pid 1's UTS namespace is ours (a host, a hostNetwork pod): our own name; without pid 1's
	 * machine id, our own. */
	snprintf(path, sizeof(path), "%s/1/ns/uts", root);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "ln %s/self/ns/uts %s/1/ns/uts && rm %s/1/root/etc/machine-id", root, root, root);
	assert_int_equal(system(path), 0);
	f = fopen("/etc/machine-id", "re");
	if (f) {
		if (!fgets(own_id, sizeof(own_id), f))
			own_id[0] = 0;
		own_id[strcspn(own_id, "\n")] = 0;
		fclose(f);
	}
	m = metadata_new(&(struct metadata_config){ .proc_root = root, .resource_attributes = "", .node_name = "node-7" });
	p = describe(m, &pi, NULL);
	assert_string_equal(attr(p, 1, "host.name"), own_host);
	if (own_id[0])
		assert_string_equal(attr(p, 1, "host.id"), own_id);
	else
		assert_null(attr(p, 1, "host.id"));
	profile_free(p);
	metadata_free(m);

	snprintf(path, sizeof(path), "rm -r %s", root);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_reads_proc),
		cmocka_unit_test(test_pid_reuse_fork_exec_exit),
		cmocka_unit_test(test_sweep_sealed),
		cmocka_unit_test(test_bound_evicts_least_recent),
		cmocka_unit_test(test_exec_keeps_old_instance),
		cmocka_unit_test(test_sweep_unsampled),
		cmocka_unit_test(test_cgroup_by_id),
		cmocka_unit_test(test_resource_attributes_parse),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_host_facts_from_pid1),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
