/*
 * The process table: (pid, start time) keys so a reused pid never mixes two processes, fork
 * inheritance, exec re-reading, the bound with eviction, sweeping exited processes; and the resource
 * attributes built from an entry (service.name precedence, OTEL_RESOURCE_ATTRIBUTES merge).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metadata.h"
#include "process_table.h"

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
	pi = process_table_sample(t, (uint32_t)getpid(), self_start(), "me");
	assert_non_null(pi);
	assert_string_equal(pi->exe_path, exe);
	/* /proc/PID/environ is the environment at exec: setenv() after it is not seen. */
	assert_non_null(pi->command_line);
	assert_int_equal(pi->samples, 1);
	assert_int_equal(process_table_sample(t, (uint32_t)getpid(), self_start(), "me")->samples, 2);
	/* The same pid with another start time is another process, and that one is gone. */
	assert_null(process_table_sample(t, (uint32_t)getpid(), self_start() + 5000000000ULL, "me"));
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
	assert_int_equal(process_table_exec(t, 900000001, 100, "parent", "/usr/bin/parent"), 0);
	assert_int_equal(process_table_fork(t, 900000002, 200, 900000001, 100, "child"), 0);
	a = process_table_find(t, 900000002, 200);
	assert_non_null(a);
	assert_string_equal(a->exe_path, "/usr/bin/parent"); /* inherited at fork */
	assert_int_equal(process_table_exec(t, 900000002, 200, "child", "/usr/bin/child"), 0);
	assert_string_equal(process_table_find(t, 900000002, 200)->exe_path, "/usr/bin/child");
	process_table_exit(t, 900000002, 200);
	/* The pid is reused by a new process: a second entry, the first one untouched. */
	assert_int_equal(process_table_exec(t, 900000002, 300, "other", "/usr/bin/other"), 0);
	a = process_table_find(t, 900000002, 200);
	b = process_table_find(t, 900000002, 300);
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(a->exe_path, "/usr/bin/child");
	assert_string_equal(b->exe_path, "/usr/bin/other");
	assert_true(a->exited);
	assert_false(b->exited);
	/* Sweeping drops only the exited one and reports its pid. */
	process_table_sweep(t, NULL, NULL);
	assert_null(process_table_find(t, 900000002, 200));
	assert_non_null(process_table_find(t, 900000002, 300));
	assert_int_equal(process_table_counters(t)->removed, 1);
	process_table_free(t);
}

static void count_forget(void *ctx, uint32_t pid)
{
	(void)pid;
	(*(unsigned *)ctx)++;
}

static void test_bound_evicts_least_recent(void **state)
{
	struct process_table *t = process_table_new(&(struct process_table_config){ .max_processes = 4 });
	unsigned forgotten = 0;

	(void)state;
	for (uint32_t i = 0; i < 4; i++)
		process_table_exec(t, 900000100 + i, 1, "p", "/bin/p");
	/* Touch the oldest so that the second oldest goes first. */
	process_table_exec(t, 900000100, 1, "p", "/bin/p");
	process_table_exec(t, 900000200, 1, "q", "/bin/q");
	assert_int_equal(process_table_count(t), 4);
	assert_int_equal(process_table_counters(t)->evicted, 1);
	assert_non_null(process_table_find(t, 900000100, 1));
	assert_null(process_table_find(t, 900000101, 1));
	process_table_exit(t, 900000100, 1);
	process_table_exit(t, 900000200, 1);
	process_table_sweep(t, count_forget, &forgotten);
	assert_int_equal(forgotten, 2);
	assert_int_equal(process_table_count(t), 2);
	process_table_free(t);
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

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
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
		cmocka_unit_test(test_bound_evicts_least_recent),
		cmocka_unit_test(test_resource_attributes_parse),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_host_facts_from_pid1),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
