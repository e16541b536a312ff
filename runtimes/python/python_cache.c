// SPDX-License-Identifier: Apache-2.0
#include "python_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_PROCESSES 4096
#define DEFAULT_MAX_BYTES ((size_t)64 << 20)
#define FIRST_SLOTS 64

struct slot {
	uint64_t code;              /* 0: empty */
	struct python_code *value;  /* NULL: bad */
};

struct process {
	pid_t pid;
	uint64_t instance;
	struct python_layout layout;
	uint64_t code_type;
	uint64_t used;              /* tick of the last use */
	struct slot *slots;         /* open addressing, a power of two, at most half full */
	size_t nslots, ncodes, bytes;
};

struct python_cache {
	struct python_cache_config cfg;
	struct process *procs;      /* dense [0, n) */
	size_t n;
	uint64_t tick;
	struct python_cache_stats stats;
};

struct python_cache *python_cache_new(const struct python_cache_config *config)
{
	struct python_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (config)
		c->cfg = *config;
	if (!c->cfg.max_processes)
		c->cfg.max_processes = DEFAULT_MAX_PROCESSES;
	if (!c->cfg.max_bytes)
		c->cfg.max_bytes = DEFAULT_MAX_BYTES;
	if (!c->cfg.read)
		c->cfg.read = python_read_process;
	c->procs = calloc(c->cfg.max_processes, sizeof(*c->procs));
	if (!c->procs) {
		free(c);
		return NULL;
	}
	return c;
}

/* Drop a process's codes (the process stays attached). */
static void clear_codes(struct python_cache *c, struct process *p)
{
	for (size_t i = 0; i < p->nslots; i++)
		free(p->slots[i].value);
	free(p->slots);
	c->stats.codes -= p->ncodes;
	c->stats.bytes -= p->bytes;
	p->slots = NULL;
	p->nslots = p->ncodes = p->bytes = 0;
}

static void remove_at(struct python_cache *c, size_t i)
{
	clear_codes(c, &c->procs[i]);
	c->procs[i] = c->procs[--c->n];
	c->stats.processes = c->n;
}

void python_cache_free(struct python_cache *c)
{
	if (!c)
		return;
	while (c->n)
		remove_at(c, c->n - 1);
	free(c->procs);
	free(c);
}

static struct process *find(const struct python_cache *c, pid_t pid, uint64_t instance)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->procs[i].pid == pid && c->procs[i].instance == instance)
			return &c->procs[i];
	return NULL;
}

int python_cache_attach(struct python_cache *c, pid_t pid, uint64_t instance, const struct python_layout *layout,
			uint64_t code_type)
{
	struct process *p = find(c, pid, instance);

	if (p) {
		clear_codes(c, p); /* another layout: what was read may be wrong */
	} else {
		if (c->n >= c->cfg.max_processes) {
			size_t lru = 0;

			for (size_t i = 1; i < c->n; i++)
				if (c->procs[i].used < c->procs[lru].used)
					lru = i;
			c->stats.codes_evicted += c->procs[lru].ncodes;
			remove_at(c, lru);
			c->stats.processes_evicted++;
		}
		p = &c->procs[c->n++];
		c->stats.processes = c->n;
	}
	*p = (struct process){ .pid = pid, .instance = instance, .layout = *layout, .code_type = code_type,
			       .used = ++c->tick };
	return 0;
}

bool python_cache_attached(const struct python_cache *c, pid_t pid, uint64_t instance)
{
	return find(c, pid, instance) != NULL;
}

void python_cache_forget(struct python_cache *c, pid_t pid, uint64_t instance)
{
	for (size_t i = 0; i < c->n;) {
		if (c->procs[i].pid == pid && (!instance || c->procs[i].instance == instance))
			remove_at(c, i);
		else
			i++;
	}
}

static size_t slot_of(const struct process *p, uint64_t code)
{
	return (size_t)((code >> 4) * 0x9e3779b97f4a7c15ull >> 17) & (p->nslots - 1);
}

static struct slot *lookup(const struct process *p, uint64_t code)
{
	if (!p->nslots)
		return NULL;
	for (size_t i = slot_of(p, code);; i = (i + 1) & (p->nslots - 1)) {
		if (p->slots[i].code == code)
			return &p->slots[i];
		if (!p->slots[i].code)
			return NULL;
	}
}

/* Room for one more code in p: grow its table (or start over when at the bound). */
static int make_room(struct python_cache *c, struct process *p)
{
	struct slot *old = p->slots, *grown;
	size_t n = p->nslots ? 2 * p->nslots : FIRST_SLOTS;

	if (p->ncodes >= PYTHON_CACHE_CODES_PER_PROCESS) {
		c->stats.codes_evicted += p->ncodes;
		clear_codes(c, p);
		old = NULL;
		n = FIRST_SLOTS;
	}
	if (p->nslots && 2 * (p->ncodes + 1) <= p->nslots)
		return 0;
	grown = calloc(n, sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	c->stats.bytes += (n - p->nslots) * sizeof(*grown);
	p->bytes += (n - p->nslots) * sizeof(*grown);
	for (size_t i = 0; old && i < p->nslots; i++) {
		size_t j;

		if (!old[i].code)
			continue;
		for (j = (size_t)((old[i].code >> 4) * 0x9e3779b97f4a7c15ull >> 17) & (n - 1); grown[j].code;
		     j = (j + 1) & (n - 1))
			;
		grown[j] = old[i];
	}
	free(old);
	p->slots = grown;
	p->nslots = n;
	return 0;
}

/* Keep the byte bound: drop the codes of the least recently used other processes. */
static void enforce_bytes(struct python_cache *c, const struct process *keep)
{
	while (c->stats.bytes > c->cfg.max_bytes) {
		struct process *lru = NULL;

		for (size_t i = 0; i < c->n; i++)
			if (&c->procs[i] != keep && c->procs[i].ncodes && (!lru || c->procs[i].used < lru->used))
				lru = &c->procs[i];
		if (!lru)
			return;
		c->stats.codes_evicted += lru->ncodes;
		clear_codes(c, lru);
	}
}

/* The cached slot of code, reading it when missing (NULL: out of memory). */
static struct slot *get_code(struct python_cache *c, struct process *p, uint64_t code)
{
	struct slot *s = lookup(p, code);
	struct python_code *value = NULL;
	size_t i;

	if (s)
		return s;
	if (make_room(c, p))
		return NULL;
	if (python_code_read(&p->layout, c->cfg.read, c->cfg.read_ctx, p->pid, code, p->code_type, &value))
		c->stats.codes_bad++;
	else
		c->stats.codes_read++;
	for (i = slot_of(p, code); p->slots[i].code; i = (i + 1) & (p->nslots - 1))
		;
	p->slots[i] = (struct slot){ .code = code, .value = value };
	p->ncodes++;
	c->stats.codes++;
	if (value) {
		p->bytes += value->bytes;
		c->stats.bytes += value->bytes;
		enforce_bytes(c, p);
	}
	return &p->slots[i];
}

int python_cache_frame_address(struct python_cache *c, pid_t pid, uint64_t instance, uint64_t code, uint64_t instr,
			       uint64_t *address)
{
	struct process *p = find(c, pid, instance);
	struct slot *s;
	uint64_t start, lasti;

	if (!p)
		return -ENOENT;
	p->used = ++c->tick;
	if (!code || (code & 7))
		return -EINVAL;
	s = get_code(c, p, code);
	if (!s || !s->value)
		return -EINVAL;
	/* A new frame's prev_instr (3.11, 3.12) is one unit before the first instruction. */
	start = code + p->layout.code_adaptive;
	lasti = instr >= start ? (instr - start) / 2 : 0;
	*address = python_frame_address(code, lasti > PYTHON_LASTI_MAX ? PYTHON_LASTI_MAX : (uint32_t)lasti);
	return 0;
}

int python_cache_lookup(struct python_cache *c, pid_t pid, uint64_t instance, uint64_t address,
			const struct python_code **code, uint32_t *line)
{
	struct process *p = find(c, pid, instance);
	struct slot *s;
	uint64_t addr;
	uint32_t lasti;

	python_frame_address_decode(address, &addr, &lasti);
	/* Dropped for the bounds since: read again (the process may still be there). */
	s = p ? get_code(c, p, addr) : NULL;
	if (!s || !s->value) {
		c->stats.frames_unknown++;
		return -ENOENT;
	}
	p->used = ++c->tick;
	c->stats.frames++;
	*code = s->value;
	*line = lasti < PYTHON_LASTI_MAX ? python_code_line(s->value, lasti) : 0;
	return 0;
}

const struct python_cache_stats *python_cache_stats(const struct python_cache *c)
{
	return &c->stats;
}
