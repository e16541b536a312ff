// SPDX-License-Identifier: Apache-2.0
#include "process/metadata.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/host_view.h"

/* Bound on host-level attributes (detected plus OTEL_RESOURCE_ATTRIBUTES) and on one key or value. */
#define MAX_HOST_ATTRIBUTES 64
#define MAX_ATTRIBUTE_LEN 1024

struct host_attribute {
	char *key, *value;
};

struct metadata {
	struct host_attribute attrs[MAX_HOST_ATTRIBUTES];
	size_t nattrs;
	unsigned skipped;   /* malformed or past the bound */
	char *node_name;
};

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Trim and percent-decode s[0 .. len) into out (MAX_ATTRIBUTE_LEN bytes). false when malformed. */
static bool decode(const char *s, size_t len, char *out)
{
	size_t n = 0;

	while (len && isspace((unsigned char)*s))
		s++, len--;
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return false;
			hi = hex_value(s[i + 1]);
			lo = hex_value(s[i + 2]);
			if (hi < 0 || lo < 0)
				return false;
			c = (char)(hi * 16 + lo);
			i += 2;
		}
		if (n + 1 >= MAX_ATTRIBUTE_LEN || !c)
			return false;
		out[n++] = c;
	}
	out[n] = 0;
	return true;
}

unsigned resource_attributes_parse(const char *text, void (*fn)(void *ctx, const char *key, const char *value),
				   void *ctx)
{
	char key[MAX_ATTRIBUTE_LEN], value[MAX_ATTRIBUTE_LEN];
	unsigned skipped = 0;

	if (!text)
		return 0;
	for (const char *entry = text; *entry;) {
		const char *end = strchr(entry, ','), *eq;
		size_t len = end ? (size_t)(end - entry) : strlen(entry);

		eq = memchr(entry, '=', len);
		if (eq && decode(entry, (size_t)(eq - entry), key) && key[0] &&
		    decode(eq + 1, len - (size_t)(eq + 1 - entry), value))
			fn(ctx, key, value);
		else if (len && strspn(entry, " \t") < len)
			skipped++;
		if (!end)
			break;
		entry = end + 1;
	}
	return skipped;
}

struct get_ctx {
	const char *name;
	char *buf;
	size_t size;
	bool found;
};

static void get_one(void *ctx, const char *key, const char *value)
{
	struct get_ctx *g = ctx;

	if (!strcmp(key, g->name)) {
		snprintf(g->buf, g->size, "%s", value);
		g->found = true;
	}
}

bool resource_attributes_get(const char *text, const char *name, char *buf, size_t size)
{
	struct get_ctx g = { .name = name, .buf = buf, .size = size };

	resource_attributes_parse(text, get_one, &g);
	return g.found;
}

/* Set key to value among the host attributes, replacing an earlier value. */
static void set_host_attribute(void *ctx, const char *key, const char *value)
{
	struct metadata *m = ctx;
	char *k, *v;

	for (size_t i = 0; i < m->nattrs; i++)
		if (!strcmp(m->attrs[i].key, key)) {
			v = strdup(value);
			if (!v) {
				m->skipped++;
				return;
			}
			free(m->attrs[i].value);
			m->attrs[i].value = v;
			return;
		}
	if (m->nattrs == MAX_HOST_ATTRIBUTES) {
		m->skipped++;
		return;
	}
	k = strdup(key);
	v = strdup(value);
	if (!k || !v) {
		free(k);
		free(v);
		m->skipped++;
		return;
	}
	m->attrs[m->nattrs++] = (struct host_attribute){ k, v };
}

/* The first word of the first line of path that is neither empty nor a comment (machine-id(5),
 * hostname(5)), into buf. false when unreadable or empty. */
static bool read_first_word(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	char line[256];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *w = line + strspn(line, " \t");

		w[strcspn(w, " \t\r\n")] = 0;
		if (!*w || *w == '#')
			continue;
		snprintf(buf, size, "%s", w);
		found = true;
	}
	fclose(f);
	return found;
}

/* host.name and host.id: the host's, also from a hostPID pod (the rules are in metadata.h). */
static void detect_host(struct metadata *m, const struct metadata_config *config, const char *node)
{
	const char *proc = config->proc_root ? config->proc_root : "/proc";
	char path[4096], value[256];

	if (config->hostname) {
		set_host_attribute(m, "host.name", config->hostname);
	} else {
		bool found = false;

		if (host_view_same_namespace(proc, "uts") != 1) {
			snprintf(path, sizeof(path), "%s/1/root/etc/hostname", proc);
			if (node && *node) {
				snprintf(value, sizeof(value), "%s", node);
				found = true;
			} else {
				found = read_first_word(path, value, sizeof(value));
			}
		}
		if (!found && !gethostname(value, sizeof(value))) {
			value[sizeof(value) - 1] = 0;
			found = true;
		}
		if (found)
			set_host_attribute(m, "host.name", value);
	}
	snprintf(path, sizeof(path), "%s/1/root/etc/machine-id", proc);
	if (config->machine_id_path ? read_first_word(config->machine_id_path, value, sizeof(value))
				    : (read_first_word(path, value, sizeof(value)) ||
				       read_first_word("/etc/machine-id", value, sizeof(value))))
		set_host_attribute(m, "host.id", value);
}

struct metadata *metadata_new(const struct metadata_config *config)
{
	struct metadata *m = calloc(1, sizeof(*m));
	const char *node, *attrs;

	if (!m)
		return NULL;
	node = config->node_name;
	if (!node)
		node = getenv("K8S_NODE_NAME");
	if (!node || !*node)
		node = getenv("NODE_NAME");
	detect_host(m, config, node);
	if (node && *node) {
		m->node_name = strdup(node);
		set_host_attribute(m, "k8s.node.name", node);
	}
	/* The operator's OTEL_RESOURCE_ATTRIBUTES win over what was detected on the host. */
	attrs = config->resource_attributes ? config->resource_attributes : getenv("OTEL_RESOURCE_ATTRIBUTES");
	m->skipped += resource_attributes_parse(attrs, set_host_attribute, m);
	return m;
}

void metadata_free(struct metadata *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nattrs; i++) {
		free(m->attrs[i].key);
		free(m->attrs[i].value);
	}
	free(m->node_name);
	free(m);
}

unsigned metadata_skipped_resource_attributes(const struct metadata *m)
{
	return m->skipped;
}

const char *metadata_node_name(const struct metadata *m)
{
	return m->node_name;
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

const char *metadata_service_name(const struct process_info *pi, const char *k8s_container, const char *comm,
				  char *buf, size_t size)
{
	static const char suffix[] = ".service";

	if (pi && pi->service_name && pi->service_name[0])
		return pi->service_name;
	if (k8s_container && k8s_container[0])
		return k8s_container;
	if (pi && pi->cgroup.systemd_unit[0]) {
		size_t len = strlen(pi->cgroup.systemd_unit), m = sizeof(suffix) - 1;

		if (len > m && !strcmp(pi->cgroup.systemd_unit + len - m, suffix)) {
			snprintf(buf, size, "%.*s", (int)(len - m), pi->cgroup.systemd_unit);
			return buf;
		}
	}
	if (pi && pi->exe_path && *basename_of(pi->exe_path))
		return basename_of(pi->exe_path);
	return comm;
}

static bool has_attribute(const struct profile *p, uint32_t process, const char *key)
{
	const struct pf_process *proc = &p->processes[process];

	for (uint32_t i = 0; i < proc->nattributes; i++)
		if (!strcmp(profile_string(p, p->process_attributes[proc->first_attribute + i].key), key))
			return true;
	return false;
}

/* Attributes the process published about itself (OTEP 4719, added first) are kept. */
static void add_string(struct profile *p, uint32_t process, const char *key, const char *value)
{
	if (value && *value && !has_attribute(p, process, key))
		profile_add_process_attribute_string(p, process, key, value);
}

void metadata_describe(const struct metadata *m, const struct process_info *pi, const struct k8s_names *k8s,
		       struct profile *p, uint32_t process)
{
	const char *comm = profile_string(p, p->processes[process].name);
	char buf[CGROUP_UNIT_LEN];

	if (pi && pi->exe_path) {
		add_string(p, process, "process.executable.path", pi->exe_path);
		add_string(p, process, "process.executable.name", basename_of(pi->exe_path));
	} else {
		add_string(p, process, "process.executable.name", comm);
	}
	if (pi) {
		add_string(p, process, "process.command_line", pi->command_line);
		add_string(p, process, "container.id", pi->cgroup.container_id);
		add_string(p, process, "k8s.pod.uid", pi->cgroup.pod_uid);
		add_string(p, process, "systemd.unit", pi->cgroup.systemd_unit);
	}
	if (k8s) {
		add_string(p, process, "k8s.pod.name", k8s->pod_name);
		add_string(p, process, "k8s.namespace.name", k8s->namespace_name);
		add_string(p, process, "k8s.container.name", k8s->container_name);
	}
	add_string(p, process, "service.name",
		   metadata_service_name(pi, k8s ? k8s->container_name : NULL, comm, buf, sizeof(buf)));
	for (size_t i = 0; i < m->nattrs; i++)
		if (!has_attribute(p, process, m->attrs[i].key))
			add_string(p, process, m->attrs[i].key, m->attrs[i].value);
}
