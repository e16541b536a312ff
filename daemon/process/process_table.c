// SPDX-License-Identifier: Apache-2.0
#include "process/process_table.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/cgroup_ids.h"
#include "process/metadata.h"
#include "proc_stat.h"

/* Bytes read of /proc/PID/environ and /proc/PID/cmdline: enough for any sane environment. */
#define ENVIRON_MAX (256u << 10)
#define CMDLINE_MAX 4096u

struct entry {
	struct process_info info;
	bool superseded;                /* the process exec'd: a newer instance is current */
	bool from_sample;               /* made by process_table_exec_unrecorded(), no exec record yet */
	bool undescribed;               /* and /proc did not describe it yet (counted while so) */
	uint64_t exited_seal;           /* the table's seal when it exited (process_table_seal()) */
	uint64_t read_at;               /* created by a fork with nothing inherited (1), or from a sample
					   taken maybe during the execve (2): /proc is read at this sample
					   (0: not) */
	struct entry *next;             /* hash chain */
	struct entry *older, *newer;    /* recency list: oldest first */
};

struct process_table {
	struct process_table_config config;
	char proc_root[PATH_MAX];
	struct cgroup_ids *cgroup_ids;  /* NULL without a cgroup v2 mount */
	struct entry **buckets;
	size_t nbuckets, count;
	struct entry *oldest, *newest;
	uint64_t last_instance;
	struct process_table_counters counters;
	uint64_t seal;                  /* process_table_seal() calls: entries exited since the last
					   one wait for the sweep after the next */
};

static size_t bucket_of(const struct process_table *t, uint32_t pid, uint64_t start_ns)
{
	uint64_t h = (start_ns ^ ((uint64_t)pid << 32) ^ pid) * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 32) & (t->nbuckets - 1);
}

struct process_table *process_table_new(const struct process_table_config *config)
{
	struct process_table *t = calloc(1, sizeof(*t));
	const char *cgroup_root;

	if (!t)
		return NULL;
	t->config = *config;
	if (!t->config.max_processes)
		t->config.max_processes = PROCESS_TABLE_DEFAULT_MAX;
	snprintf(t->proc_root, sizeof(t->proc_root), "%s", config->proc_root ? config->proc_root : "/proc");
	t->config.proc_root = t->proc_root;
	for (t->nbuckets = 64; t->nbuckets < t->config.max_processes; t->nbuckets *= 2)
		;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	if (!t->buckets) {
		free(t);
		return NULL;
	}
	cgroup_root = config->cgroup_root ? config->cgroup_root : cgroup_v2_root();
	if (cgroup_root && !(t->cgroup_ids = cgroup_ids_new(cgroup_root, 0))) {
		free(t->buckets);
		free(t);
		return NULL;
	}
	t->config.cgroup_root = NULL;
	return t;
}

static void entry_free(struct entry *e)
{
	free(e->info.exe_path);
	free(e->info.command_line);
	free(e->info.service_name);
	free(e);
}

void process_table_free(struct process_table *t)
{
	if (!t)
		return;
	for (struct entry *e = t->oldest, *next; e; e = next) {
		next = e->newer;
		entry_free(e);
	}
	cgroup_ids_free(t->cgroup_ids);
	free(t->buckets);
	free(t);
}

/* The current instance of (pid, start_ns): instances replaced by an exec are skipped. */
static struct entry **slot_of(const struct process_table *t, uint32_t pid, uint64_t start_ns)
{
	struct entry **pp = &t->buckets[bucket_of(t, pid, start_ns)];

	while (*pp && ((*pp)->info.pid != pid || (*pp)->info.start_ns != start_ns || (*pp)->superseded))
		pp = &(*pp)->next;
	return pp;
}

static void unlink_recency(struct process_table *t, struct entry *e)
{
	if (e->older)
		e->older->newer = e->newer;
	else
		t->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		t->newest = e->older;
	e->older = e->newer = NULL;
}

static void append_recency(struct process_table *t, struct entry *e)
{
	e->older = t->newest;
	e->newer = NULL;
	if (t->newest)
		t->newest->newer = e;
	else
		t->oldest = e;
	t->newest = e;
}

static void touch(struct process_table *t, struct entry *e)
{
	if (t->newest != e) {
		unlink_recency(t, e);
		append_recency(t, e);
	}
}

static void remove_entry(struct process_table *t, struct entry *e)
{
	struct entry **pp = &t->buckets[bucket_of(t, e->info.pid, e->info.start_ns)];

	while (*pp != e)
		pp = &(*pp)->next;

	*pp = e->next;
	unlink_recency(t, e);
	t->count--;
	entry_free(e);
}

static struct entry *find(const struct process_table *t, uint32_t pid, uint64_t start_ns)
{
	return *slot_of(t, pid, start_ns);
}

/* A new, empty entry (the table must not hold the key). Evicts the least recently seen when full. */
static struct entry *add(struct process_table *t, uint32_t pid, uint64_t start_ns, const char *comm)
{
	struct entry *e;
	size_t b;

	if (t->count >= t->config.max_processes && t->oldest) {
		if (t->config.evicted)
			t->config.evicted(t->config.evicted_ctx, t->oldest->info.pid, t->oldest->info.instance);
		remove_entry(t, t->oldest);
		t->counters.evicted++;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->info.pid = pid;
	e->info.start_ns = start_ns;
	e->info.instance = ++t->last_instance;
	if (comm)
		snprintf(e->info.comm, sizeof(e->info.comm), "%s", comm);
	b = bucket_of(t, pid, start_ns);
	e->next = t->buckets[b];
	t->buckets[b] = e;
	append_recency(t, e);
	t->count++;
	t->counters.added++;
	return e;
}

bool process_same_start(uint64_t start_ns, uint64_t proc_start_ns)
{
	return proc_stat_same_start(start_ns, proc_start_ns / proc_stat_tick_ns());
}

/* At most max - 1 bytes of path into a malloc'ed, NUL-terminated buffer; its length in *len. */
static int read_file(const char *path, size_t max, char **out, size_t *len)
{
	size_t total = 0;
	char *buf = malloc(max);
	ssize_t n = 0;
	int fd;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return errno == ENOENT ? -ESRCH : -errno;
	}
	while (total < max - 1 && (n = read(fd, buf + total, max - 1 - total)) > 0)
		total += (size_t)n;
	close(fd);
	if (n < 0) {
		free(buf);
		return -errno;
	}
	buf[total] = 0;
	*out = buf;
	*len = total;
	return 0;
}

int process_start_ns(const char *proc_root, uint32_t pid, uint64_t *start_ns)
{
	uint64_t ticks;
	int r = proc_stat_start_ticks(proc_root, (pid_t)pid, &ticks);

	if (r)
		return r;
	*start_ns = ticks * proc_stat_tick_ns();
	return 0;
}

/* Pull OTEL_SERVICE_NAME, else service.name of OTEL_RESOURCE_ATTRIBUTES, from NUL-separated environ. */
static char *service_name_of_environ(const char *env, size_t len)
{
	static const char service[] = "OTEL_SERVICE_NAME=", attrs[] = "OTEL_RESOURCE_ATTRIBUTES=";
	char value[256];
	const char *from_attrs = NULL;

	for (size_t i = 0; i < len; i += strlen(env + i) + 1) {
		const char *var = env + i;

		if (!strncmp(var, service, sizeof(service) - 1) && var[sizeof(service) - 1])
			return strdup(var + sizeof(service) - 1);
		if (!strncmp(var, attrs, sizeof(attrs) - 1))
			from_attrs = var + sizeof(attrs) - 1;
	}
	if (from_attrs && resource_attributes_get(from_attrs, "service.name", value, sizeof(value)) && value[0])
		return strdup(value);
	return NULL;
}

/* A string field replaced by what was read (when it was). */
static void replace(char **field, char *value)
{
	free(*field);
	*field = value;
}

/*
 * Read the process's executable, cgroup, environment and (when asked) command line from /proc, after
 * checking that pid still names the process that started at start_ns. 0, -ESRCH or -errno. pi is
 * written only once the pid is seen to name the same process after every read: a process that exits
 * while it is read may have its pid reused at once (the storm test's driver does it on purpose), and
 * the reads would then mix in the new process's files, its parent's environment among them, as
 * happened before pi was written last.
 */
static int read_proc(struct process_table *t, struct process_info *pi)
{
	char path[PATH_MAX + 32], exe[PATH_MAX], *buf, *exe_path = NULL, *service = NULL, *command_line = NULL;
	bool have_exe = false, have_cgroup = false, have_env = false, have_command_line = false;
	struct cgroup_info cgroup = { 0 };
	uint64_t start;
	size_t len;
	ssize_t n;
	int r;

	r = process_start_ns(t->proc_root, pi->pid, &start);
	if (r)
		return r;
	if (!process_same_start(pi->start_ns, start))
		return -ESRCH; /* the pid names another process now */

	snprintf(path, sizeof(path), "%s/%u/exe", t->proc_root, pi->pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		exe_path = strdup(exe);
		have_exe = true;
	}
	snprintf(path, sizeof(path), "%s/%u/cgroup", t->proc_root, pi->pid);
	if (!read_file(path, 16384, &buf, &len)) {
		cgroup_parse(buf, &cgroup);
		free(buf);
		have_cgroup = true;
	}
	snprintf(path, sizeof(path), "%s/%u/environ", t->proc_root, pi->pid);
	if (!read_file(path, ENVIRON_MAX, &buf, &len)) {
		service = service_name_of_environ(buf, len);
		free(buf);
		have_env = true;
	}
	if (t->config.command_line) {
		snprintf(path, sizeof(path), "%s/%u/cmdline", t->proc_root, pi->pid);
		if (!read_file(path, CMDLINE_MAX, &buf, &len)) {
			while (len && !buf[len - 1])
				len--;
			for (size_t i = 0; i < len; i++)
				if (!buf[i])
					buf[i] = ' ';
			buf[len] = 0;
			command_line = len ? buf : NULL;
			if (!len)
				free(buf);
			have_command_line = true;
		}
	}
	/* Read again: a pid reused during the reads would have mixed two processes. */
	if (process_start_ns(t->proc_root, pi->pid, &start) || !process_same_start(pi->start_ns, start)) {
		free(exe_path);
		free(service);
		free(command_line);
		return -ESRCH;
	}
	if (have_exe)
		replace(&pi->exe_path, exe_path);
	if (have_cgroup)
		pi->cgroup = cgroup;
	if (have_env)
		replace(&pi->service_name, service);
	if (have_command_line)
		replace(&pi->command_line, command_line);
	pi->from_proc = true;
	return 0;
}

/*
 * The record saw the process in cgroup id, which is not the one its entry describes (inherited at
 * fork: a container runtime moves its child into the container's cgroup before the exec) and
 * /proc could not be read: find the cgroup by its id. When the id names no cgroup any more, the
 * inherited one is dropped rather than kept wrong.
 */
static void resolve_cgroup(struct process_table *t, struct process_info *pi, uint64_t id)
{
	struct cgroup_info info = { 0 };
	int r;

	if (!id || id == pi->cgroup_id || !t->cgroup_ids)
		return;
	r = cgroup_ids_lookup(t->cgroup_ids, id, &info);
	pi->cgroup_id = id;
	if (r == -ENODATA)
		return; /* the root: the v2 hierarchy is not used here, what was inherited stays */
	if (r)
		t->counters.cgroup_unresolved++;
	else
		t->counters.cgroup_resolved++;
	pi->cgroup = info;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* A new instance of (pid, start_ns) for the program it exec'd, in the same cgroup, described by
 * nothing yet; NULL on allocation failure. */
static struct entry *exec_instance(struct process_table *t, uint32_t pid, uint64_t start_ns, const char *comm,
				   uint32_t exec_id)
{
	struct entry *e, *old = find(t, pid, start_ns);
	struct cgroup_info inherited = { 0 };
	uint64_t inherited_id = 0;

	if (old) {
		/* Copied now: adding the new entry may evict the old one. */
		inherited = old->info.cgroup;
		inherited_id = old->info.cgroup_id;
		/* Samples of the old program may wait in the aggregate for their profile: they keep the
		 * old instance (swept with the exited ones, or at once when it has none); the new program
		 * is a new instance in the same cgroup. What the old one (inherited at fork) said about
		 * itself no longer holds. */
		old->superseded = true;
		old->info.exited = true;
		old->exited_seal = t->seal;
	}
	e = add(t, pid, start_ns, comm);
	if (!e)
		return NULL;
	e->info.cgroup = inherited;
	e->info.cgroup_id = inherited_id;
	e->info.exec_id = exec_id;
	return e;
}

/* Read an exec'd program's description from /proc. false: gone already (the cgroup inherited at
 * fork, or the record's, and the file it exec'd if known). */
static bool describe_exec(struct process_table *t, struct entry *e, const char *comm, const char *filename,
			  uint64_t cgroup_id)
{
	bool read = !read_proc(t, &e->info);

	snprintf(e->info.comm, sizeof(e->info.comm), "%s", comm);
	touch(t, e);
	if (read) {
		e->info.cgroup_id = cgroup_id;
	} else {
		t->counters.proc_read_failed++;
		resolve_cgroup(t, &e->info, cgroup_id);
	}
	if (!e->info.exe_path && filename && filename[0])
		e->info.exe_path = strdup(filename);
	return read;
}

/* An instance made from a sample got its description, or its exec record. */
static void described(struct process_table *t, struct entry *e)
{
	if (e->undescribed)
		t->counters.exec_unrecorded_unknown--;
	e->undescribed = false;
}

int process_table_exec(struct process_table *t, uint32_t pid, uint64_t start_ns, const char *comm,
		       const char *filename, uint64_t cgroup_id, uint32_t exec_id)
{
	struct entry *e = find(t, pid, start_ns);

	t->counters.execs++;
	if (e && e->from_sample && e->info.exec_id == exec_id) {
		/* A sample taken during this execve (after the kernel counted the exec, before the
		 * record was sent) made the instance first: the same program, the same instance. */
		t->counters.exec_record_late++;
		e->from_sample = false;
		e->read_at = 0;
		described(t, e);
	} else if (!(e = exec_instance(t, pid, start_ns, comm, exec_id))) {
		return -ENOMEM;
	}
	describe_exec(t, e, comm, filename, cgroup_id);
	return 0;
}

int process_table_exec_unrecorded(struct process_table *t, uint32_t pid, uint64_t start_ns, const char *comm,
				  uint64_t cgroup_id, uint32_t exec_id, bool maybe_in_execve)
{
	struct entry *e = exec_instance(t, pid, start_ns, comm, exec_id);

	if (!e)
		return -ENOMEM;
	t->counters.exec_unrecorded++;
	e->from_sample = true;
	/* Undescribed until /proc says (never described as the old program): counted while so. */
	e->undescribed = true;
	t->counters.exec_unrecorded_unknown++;
	if (maybe_in_execve) {
		/* /proc would not show the new environment yet: read at the next sample, unless the
		 * exec record comes first. */
		snprintf(e->info.comm, sizeof(e->info.comm), "%s", comm);
		resolve_cgroup(t, &e->info, cgroup_id);
		e->read_at = 2;
	} else if (describe_exec(t, e, comm, NULL, cgroup_id)) {
		described(t, e);
	}
	return 0;
}

int process_table_fork(struct process_table *t, uint32_t pid, uint64_t start_ns, uint32_t parent_pid,
		       uint64_t parent_start_ns, const char *comm, uint64_t cgroup_id, uint32_t exec_id)
{
	struct entry *parent, *e;

	t->counters.forks++;
	if (find(t, pid, start_ns))
		return 0;
	e = add(t, pid, start_ns, comm);
	if (!e)
		return -ENOMEM;
	e->info.exec_id = exec_id;
	/* A forked child runs its parent's program in its parent's cgroup with its environment: when
	 * the parent's entry describes that program (its exec count is the child's). */
	parent = find(t, parent_pid, parent_start_ns);
	if (parent) {
		e->info.cgroup = parent->info.cgroup; /* an exec does not change it */
		e->info.cgroup_id = parent->info.cgroup_id;
	}
	if (parent && parent->info.exec_id == exec_id) {
		e->info.exe_path = dup_or_null(parent->info.exe_path);
		e->info.command_line = dup_or_null(parent->info.command_line);
		e->info.service_name = dup_or_null(parent->info.service_name);
		e->info.from_proc = parent->info.from_proc;
	} else {
		e->read_at = 1;
		t->counters.fork_uninherited++;
	}
	/* Started in another cgroup than its parent's (clone3 CLONE_INTO_CGROUP), or no parent known. */
	resolve_cgroup(t, &e->info, cgroup_id);
	return 0;
}

void process_table_exit(struct process_table *t, uint32_t pid, uint64_t start_ns)
{
	struct entry *e = find(t, pid, start_ns);

	t->counters.exits++;
	if (e) {
		e->info.exited = true;
		e->exited_seal = t->seal;
	}
}

const struct process_info *process_table_sample(struct process_table *t, uint32_t pid, uint64_t start_ns,
						const char *comm, uint64_t cgroup_id, uint32_t exec_id)
{
	struct entry *e = find(t, pid, start_ns);

	if (e) {
		touch(t, e);
		if (!e->info.samples++)
			t->counters.sampled++;
		if (e->read_at == e->info.samples) {
			/* Forked with nothing inherited, or made by a sample maybe in the execve: once,
			 * at its next sample. Gone: its name and cgroup only. */
			e->read_at = 0;
			if (read_proc(t, &e->info)) {
				t->counters.proc_read_failed++;
			} else {
				e->info.cgroup_id = cgroup_id;
				described(t, e);
			}
		}
		/* Moved to another cgroup since it was described (cached: no walk per sample). */
		resolve_cgroup(t, &e->info, cgroup_id);
		return &e->info;
	}
	e = add(t, pid, start_ns, comm);
	if (!e)
		return NULL;
	e->info.exec_id = exec_id;
	if (read_proc(t, &e->info)) {
		/* Started and ended between two reads of the ring buffer, and its records were lost. */
		t->counters.proc_read_failed++;
		t->counters.no_process++;
		remove_entry(t, e);
		t->counters.added--;
		return NULL;
	}
	e->info.samples = 1;
	t->counters.sampled++;
	e->info.cgroup_id = cgroup_id;
	return &e->info;
}

const struct process_info *process_table_find(const struct process_table *t, uint32_t pid, uint64_t start_ns)
{
	struct entry *e = find(t, pid, start_ns);

	return e ? &e->info : NULL;
}

const struct process_info *process_table_find_instance(const struct process_table *t, uint32_t pid,
							uint64_t start_ns, uint64_t instance)
{
	for (struct entry *e = t->buckets[bucket_of(t, pid, start_ns)]; e; e = e->next)
		if (e->info.pid == pid && e->info.start_ns == start_ns && e->info.instance == instance)
			return &e->info;
	return NULL;
}

static void sweep(struct process_table *t, bool only_unsampled, void (*forget)(void *ctx, uint32_t pid,
										 uint64_t instance), void *ctx)
{
	for (struct entry *e = t->oldest, *next; e; e = next) {
		next = e->newer;
		if (!e->info.exited || (only_unsampled && e->info.samples) ||
		    (!only_unsampled && t->seal && e->exited_seal >= t->seal))
			continue;
		if (forget)
			forget(ctx, e->info.pid, e->info.instance);
		remove_entry(t, e);
		t->counters.removed++;
	}
}

size_t process_table_count(const struct process_table *t)
{
	return t->count;
}

const struct process_table_counters *process_table_counters(const struct process_table *t)
{
	return &t->counters;
}

void process_table_seal(struct process_table *t)
{
	t->seal++;
}

void process_table_sweep(struct process_table *t, void (*forget)(void *ctx, uint32_t pid, uint64_t instance),
			 void *ctx)
{
	sweep(t, false, forget, ctx);
}

void process_table_sweep_unsampled(struct process_table *t,
				   void (*forget)(void *ctx, uint32_t pid, uint64_t instance), void *ctx)
{
	sweep(t, true, forget, ctx);
}
