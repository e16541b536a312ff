// SPDX-License-Identifier: Apache-2.0
/*
 * Bounded cache of this node's pods, filled from the Kubernetes API's JSON (json-c). See k8s_pods.h.
 * Pods live in a fixed array of slots chained from a hash of their uid; JSON is parsed into a
 * struct parsed_pod outside the lock and applied under it.
 */
#include "process/k8s_pods.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define NO_SLOT UINT32_MAX
#define UID_LEN 64        /* Kubernetes uids are 36 characters; longer ones are refused */
#define JSON_MAX_DEPTH 64 /* managedFields nest deeper than json-c's default of 32 */

struct container {
	char id[65];   /* lowercase hex, as in the cgroup path */
	char name[64]; /* the name in the pod spec */
};

/* A pod as the cache keeps it; containers is owned (malloc'd, NULL when none). */
struct parsed_pod {
	char uid[UID_LEN];
	char name[254];
	char namespace_name[64];
	struct container *containers;
	uint32_t ncontainers;
	uint32_t containers_dropped;
};

struct slot {
	struct parsed_pod pod;
	uint64_t generation;  /* list generation that last saw it */
	uint64_t updated_ns;  /* last add/update */
	uint64_t deleted_ns;  /* when it was deleted (valid when deleted) */
	uint32_t next;        /* hash chain, or the free list */
	bool used;
	bool deleted;
};

struct k8s_pods {
	pthread_mutex_t lock;
	struct slot *slots;
	size_t max;
	uint32_t *buckets;    /* heads of the hash chains */
	size_t nbuckets;      /* a power of two */
	uint32_t free_head;   /* free slots chained through next */
	size_t ndeleted;      /* deleted pods waiting out their grace period */
	uint64_t grace_ns;
	uint64_t generation;  /* of the last list applied */
	struct k8s_pods_counters counters;
};

struct k8s_pods *k8s_pods_new(size_t max_pods, uint64_t grace_ns)
{
	struct k8s_pods *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->max = max_pods ? max_pods : K8S_PODS_DEFAULT_MAX;
	c->grace_ns = grace_ns ? grace_ns : K8S_PODS_DEFAULT_GRACE_NS;
	if (c->max >= UINT32_MAX / 4)
		goto fail;
	for (c->nbuckets = 16; c->nbuckets < 2 * c->max; c->nbuckets *= 2)
		;
	c->slots = calloc(c->max, sizeof(*c->slots));
	c->buckets = malloc(c->nbuckets * sizeof(*c->buckets));
	if (!c->slots || !c->buckets)
		goto fail;
	for (size_t i = 0; i < c->nbuckets; i++)
		c->buckets[i] = NO_SLOT;
	for (size_t i = 0; i < c->max; i++)
		c->slots[i].next = i + 1 < c->max ? (uint32_t)(i + 1) : NO_SLOT;
	c->free_head = 0;
	pthread_mutex_init(&c->lock, NULL);
	return c;
fail:
	free(c->slots);
	free(c->buckets);
	free(c);
	return NULL;
}

void k8s_pods_free(struct k8s_pods *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	for (size_t i = 0; i < c->max; i++)
		free(c->slots[i].pod.containers);
	free(c->slots);
	free(c->buckets);
	free(c);
}

/* FNV-1a of the uid. */
static size_t bucket_of(const struct k8s_pods *c, const char *uid)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *uid; uid++)
		h = (h ^ (unsigned char)*uid) * 0x100000001b3ULL;
	return (size_t)(h & (c->nbuckets - 1));
}

static uint32_t find(const struct k8s_pods *c, const char *uid)
{
	for (uint32_t i = c->buckets[bucket_of(c, uid)]; i != NO_SLOT; i = c->slots[i].next)
		if (!strcmp(c->slots[i].pod.uid, uid))
			return i;
	return NO_SLOT;
}

static void unlink_slot(struct k8s_pods *c, uint32_t idx)
{
	uint32_t *link = &c->buckets[bucket_of(c, c->slots[idx].pod.uid)];

	while (*link != NO_SLOT && *link != idx)
		link = &c->slots[*link].next;
	if (*link == idx)
		*link = c->slots[idx].next;
	if (c->slots[idx].deleted)
		c->ndeleted--;
	free(c->slots[idx].pod.containers);
	c->slots[idx].pod.containers = NULL;
	c->slots[idx].used = false;
	c->slots[idx].deleted = false;
	c->slots[idx].next = c->free_head;
	c->free_head = idx;
	c->counters.entries--;
}

/* The victim when full: the deleted pod deleted first, else the pod updated longest ago. */
static uint32_t victim(const struct k8s_pods *c)
{
	uint32_t best = NO_SLOT;

	for (uint32_t i = 0; i < c->max; i++) {
		const struct slot *s = &c->slots[i];

		if (!s->used)
			continue;
		if (best == NO_SLOT)
			best = i;
		else if (s->deleted != c->slots[best].deleted) {
			if (s->deleted)
				best = i;
		} else if (s->deleted ? s->deleted_ns < c->slots[best].deleted_ns
				      : s->updated_ns < c->slots[best].updated_ns)
			best = i;
	}
	return best;
}

/* Drop the deleted pods whose grace period is over. */
static void purge(struct k8s_pods *c, uint64_t now_ns)
{
	for (uint32_t i = 0; i < c->max && c->ndeleted; i++) {
		struct slot *s = &c->slots[i];

		if (s->used && s->deleted && now_ns - s->deleted_ns >= c->grace_ns)
			unlink_slot(c, i);
	}
}

/* Add or replace a pod; the cache takes pod->containers (and clears it in *pod). */
static void upsert(struct k8s_pods *c, struct parsed_pod *pod, uint64_t now_ns)
{
	uint32_t idx = find(c, pod->uid);
	struct slot *s;
	size_t b;

	c->counters.containers_dropped += pod->containers_dropped;
	if (idx != NO_SLOT) {
		s = &c->slots[idx];
		if (s->deleted) {
			s->deleted = false;
			c->ndeleted--;
		}
		free(s->pod.containers);
		s->pod = *pod;
		pod->containers = NULL;
		s->generation = c->generation;
		s->updated_ns = now_ns;
		c->counters.updated++;
		return;
	}
	if (c->free_head == NO_SLOT) {
		unlink_slot(c, victim(c));
		c->counters.evicted++;
	}
	idx = c->free_head;
	s = &c->slots[idx];
	c->free_head = s->next;
	*s = (struct slot){ .pod = *pod, .generation = c->generation, .updated_ns = now_ns, .used = true };
	pod->containers = NULL;
	b = bucket_of(c, pod->uid);
	s->next = c->buckets[b];
	c->buckets[b] = idx;
	c->counters.entries++;
	c->counters.added++;
}

static void mark_deleted(struct k8s_pods *c, uint32_t idx, uint64_t now_ns)
{
	struct slot *s = &c->slots[idx];

	if (s->deleted)
		return;
	s->deleted = true;
	s->deleted_ns = now_ns;
	c->ndeleted++;
	c->counters.deleted++;
}

/* ---- JSON ---- */

static json_object *parse_json(const char *text, size_t len)
{
	struct json_tokener *tok;
	json_object *o;

	if (len > INT_MAX)
		return NULL;
	tok = json_tokener_new_ex(JSON_MAX_DEPTH);
	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (o && json_tokener_get_error(tok) == json_tokener_success) {
		/* Only white space may follow the value. */
		for (size_t i = json_tokener_get_parse_end(tok); i < len; i++)
			if (!isspace((unsigned char)text[i])) {
				json_object_put(o);
				o = NULL;
				break;
			}
	} else {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

static json_object *member(json_object *o, const char *key, json_type type)
{
	json_object *v;

	if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, type))
		return NULL;
	return v;
}

static const char *string_member(json_object *o, const char *key)
{
	json_object *v = member(o, key, json_type_string);

	return v ? json_object_get_string(v) : NULL;
}

/* Copy s into dst (size bytes); false when s is missing, empty or too long. */
static bool copy_name(char *dst, size_t size, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (!n || n >= size)
		return false;
	memcpy(dst, s, n + 1);
	return true;
}

const char *k8s_container_id_strip(const char *container_id)
{
	const char *sep;

	if (!container_id)
		return NULL;
	sep = strstr(container_id, "://");
	if (sep)
		container_id = sep + 3;
	return *container_id ? container_id : NULL;
}

static void parse_statuses(json_object *statuses, struct parsed_pod *pod)
{
	size_t n = statuses ? json_object_array_length(statuses) : 0;

	for (size_t i = 0; i < n; i++) {
		json_object *st = json_object_array_get_idx(statuses, i);
		const char *id = k8s_container_id_strip(string_member(st, "containerID"));
		struct container *ct;
		size_t len;

		/* A container not started yet has no id: nothing can run in it. */
		if (!id)
			continue;
		len = strlen(id);
		if (len > 64 || strspn(id, "0123456789abcdefABCDEF") != len)
			continue;
		if (pod->ncontainers == K8S_POD_MAX_CONTAINERS) {
			pod->containers_dropped++;
			continue;
		}
		ct = &pod->containers[pod->ncontainers];
		if (!copy_name(ct->name, sizeof(ct->name), string_member(st, "name")))
			continue;
		for (size_t j = 0; j <= len; j++)
			ct->id[j] = (char)tolower((unsigned char)id[j]);
		pod->ncontainers++;
	}
}

static void parsed_pod_clear(struct parsed_pod *pod)
{
	free(pod->containers);
	pod->containers = NULL;
}

/* A Pod object into pod. -EBADMSG when it lacks a uid, name or namespace, or -ENOMEM. */
static int parse_pod(json_object *o, struct parsed_pod *pod)
{
	static const char *const lists[] = { "initContainerStatuses", "containerStatuses",
					     "ephemeralContainerStatuses" };
	json_object *meta = member(o, "metadata", json_type_object);
	json_object *status = member(o, "status", json_type_object);
	json_object *statuses[3];
	size_t total = 0;

	*pod = (struct parsed_pod){ 0 };
	if (!copy_name(pod->uid, sizeof(pod->uid), string_member(meta, "uid")) ||
	    !copy_name(pod->name, sizeof(pod->name), string_member(meta, "name")) ||
	    !copy_name(pod->namespace_name, sizeof(pod->namespace_name), string_member(meta, "namespace")))
		return -EBADMSG;
	for (size_t i = 0; i < 3; i++) {
		statuses[i] = member(status, lists[i], json_type_array);
		total += statuses[i] ? json_object_array_length(statuses[i]) : 0;
	}
	if (total > K8S_POD_MAX_CONTAINERS)
		total = K8S_POD_MAX_CONTAINERS;
	if (total) {
		pod->containers = calloc(total, sizeof(*pod->containers));
		if (!pod->containers)
			return -ENOMEM;
	}
	for (size_t i = 0; i < 3; i++)
		parse_statuses(statuses[i], pod);
	return 0;
}

static void copy_rv(json_object *o, char *rv, size_t rv_size)
{
	const char *v = string_member(member(o, "metadata", json_type_object), "resourceVersion");

	if (v && strlen(v) < rv_size)
		memcpy(rv, v, strlen(v) + 1);
}

static void count_malformed(struct k8s_pods *c, uint64_t n)
{
	pthread_mutex_lock(&c->lock);
	c->counters.malformed += n;
	pthread_mutex_unlock(&c->lock);
}

int k8s_pods_apply_list(struct k8s_pods *c, const char *json, size_t len, uint64_t now_ns, char *rv,
			size_t rv_size)
{
	json_object *root = parse_json(json, len), *items;
	const char *kind = string_member(root, "kind");
	struct parsed_pod *pods = NULL;
	size_t n, npods = 0, bad = 0;
	bool nomem = false;

	items = member(root, "items", json_type_array);
	if (!items || (kind && strcmp(kind, "PodList"))) {
		json_object_put(root);
		count_malformed(c, 1);
		return -EBADMSG;
	}
	n = json_object_array_length(items);
	if (n) {
		pods = malloc(n * sizeof(*pods));
		if (!pods) {
			json_object_put(root);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < n; i++) {
		int r = parse_pod(json_object_array_get_idx(items, i), &pods[npods]);

		if (!r)
			npods++;
		else if (r == -EBADMSG)
			bad++;
		else
			nomem = true;
	}
	if (nomem) {
		/* A partial list would delete the pods it misses: apply none of it. */
		for (size_t i = 0; i < npods; i++)
			parsed_pod_clear(&pods[i]);
		free(pods);
		json_object_put(root);
		return -ENOMEM;
	}
	if (rv_size) {
		rv[0] = 0;
		copy_rv(root, rv, rv_size);
	}
	json_object_put(root);

	pthread_mutex_lock(&c->lock);
	c->generation++;
	c->counters.malformed += bad;
	purge(c, now_ns);
	for (size_t i = 0; i < npods; i++)
		upsert(c, &pods[i], now_ns);
	/* Pods the list no longer has were deleted while nobody watched. */
	for (uint32_t i = 0; i < c->max; i++)
		if (c->slots[i].used && c->slots[i].generation != c->generation)
			mark_deleted(c, i, now_ns);
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < npods; i++)
		parsed_pod_clear(&pods[i]);
	free(pods);
	return 0;
}

int k8s_pods_apply_event(struct k8s_pods *c, const char *json, size_t len, uint64_t now_ns, char *rv,
			 size_t rv_size, int *status_code)
{
	static const char *const names[] = {
		[K8S_EVENT_ADDED] = "ADDED", [K8S_EVENT_MODIFIED] = "MODIFIED", [K8S_EVENT_DELETED] = "DELETED",
		[K8S_EVENT_BOOKMARK] = "BOOKMARK", [K8S_EVENT_ERROR] = "ERROR",
	};
	json_object *root = parse_json(json, len), *object, *code;
	const char *type = string_member(root, "type");
	struct parsed_pod pod = { 0 };
	int kind = -1;
	uint32_t idx;

	object = member(root, "object", json_type_object);
	for (int i = 0; type && i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcmp(type, names[i]))
			kind = i;
	if (kind < 0 || !object)
		goto malformed;
	if (kind == K8S_EVENT_ERROR) {
		code = member(object, "code", json_type_int);
		*status_code = code ? json_object_get_int(code) : 0;
		json_object_put(root);
		return kind;
	}
	if (kind != K8S_EVENT_BOOKMARK) {
		int r = parse_pod(object, &pod);

		if (r == -ENOMEM) {
			json_object_put(root);
			return r;
		}
		if (r)
			goto malformed;
	}
	copy_rv(object, rv, rv_size);
	json_object_put(root);

	pthread_mutex_lock(&c->lock);
	purge(c, now_ns);
	if (kind == K8S_EVENT_ADDED || kind == K8S_EVENT_MODIFIED) {
		upsert(c, &pod, now_ns);
	} else if (kind == K8S_EVENT_DELETED) {
		idx = find(c, pod.uid);
		if (idx != NO_SLOT)
			mark_deleted(c, idx, now_ns);
	}
	pthread_mutex_unlock(&c->lock);
	parsed_pod_clear(&pod);
	return kind;

malformed:
	parsed_pod_clear(&pod);
	json_object_put(root);
	count_malformed(c, 1);
	return -EBADMSG;
}

bool k8s_pods_lookup(struct k8s_pods *c, const char *pod_uid, const char *container_id, struct k8s_pod_names *out)
{
	const struct parsed_pod *pod;
	uint32_t idx;

	*out = (struct k8s_pod_names){ 0 };
	if (!pod_uid || !*pod_uid)
		return false;
	pthread_mutex_lock(&c->lock);
	c->counters.lookups++;
	idx = find(c, pod_uid);
	if (idx == NO_SLOT) {
		pthread_mutex_unlock(&c->lock);
		return false;
	}
	c->counters.hits++;
	/* A deleted pod keeps its names: a uid is never reused, so they are still right. */
	pod = &c->slots[idx].pod;
	memcpy(out->pod_name, pod->name, sizeof(out->pod_name));
	memcpy(out->namespace_name, pod->namespace_name, sizeof(out->namespace_name));
	for (uint32_t i = 0; container_id && *container_id && i < pod->ncontainers; i++)
		if (!strcmp(pod->containers[i].id, container_id)) {
			memcpy(out->container_name, pod->containers[i].name, sizeof(out->container_name));
			break;
		}
	pthread_mutex_unlock(&c->lock);
	return true;
}

void k8s_pods_counters(struct k8s_pods *c, struct k8s_pods_counters *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->counters;
	pthread_mutex_unlock(&c->lock);
}
