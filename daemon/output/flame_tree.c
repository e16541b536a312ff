// SPDX-License-Identifier: Apache-2.0
#include "output/flame_tree.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile/intern.h"

/* Strings and frames: far more than any profile's (a stack's frames are bounded by the unwinder). */
#define FLAME_MAX_STRINGS (4u << 20)
#define FLAME_MAX_FRAMES (4u << 20)
#define FLAME_ROOT_FRAME 0

/* A frame's key in the frame table: string ids. */
struct frame_key {
	uint32_t name, module, file, type;
};

struct flame_view {
	char *name, *unit;
	bool diff;
	uint32_t *parent, *frame, *first_child, *next_sibling;
	uint64_t *self[2];
	size_t nnodes, cap;
	uint64_t *slots;  /* open addressing: (parent << 32 | frame) + 1 -> node, 0 = empty */
	uint32_t *slot_node;
	size_t nslots;
	uint64_t total[2];
};

struct flame {
	struct intern *strings, *frames;
	int64_t *frame_lines;
	size_t max_nodes;
	char *title, *subtitle;
	struct flame_view views[FLAME_MAX_VIEWS];
	int nviews;
	uint64_t dropped;
};

static uint32_t str_id(struct flame *f, const char *s)
{
	int64_t id;

	s = s ? s : "";
	id = intern_put(f->strings, s, strlen(s) + 1, NULL);
	return id < 0 ? UINT32_MAX : (uint32_t)id;
}

static const char *str(const struct flame *f, uint32_t id)
{
	return intern_key(f->strings, id, NULL);
}

struct flame *flame_new(size_t max_nodes)
{
	struct flame *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->max_nodes = max_nodes ? max_nodes : FLAME_DEFAULT_MAX_NODES;
	f->strings = intern_new(FLAME_MAX_STRINGS);
	f->frames = intern_new(FLAME_MAX_FRAMES);
	if (!f->strings || !f->frames || str_id(f, "") != 0 ||
	    flame_frame(f, &(struct flame_frame_desc){ .name = "all", .type = "root" }) != FLAME_ROOT_FRAME) {
		flame_free(f);
		errno = ENOMEM;
		return NULL;
	}
	return f;
}

void flame_free(struct flame *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->nviews; i++) {
		struct flame_view *v = &f->views[i];

		free(v->name);
		free(v->unit);
		free(v->parent);
		free(v->frame);
		free(v->first_child);
		free(v->next_sibling);
		free(v->self[0]);
		free(v->self[1]);
		free(v->slots);
		free(v->slot_node);
	}
	intern_free(f->strings);
	intern_free(f->frames);
	free(f->frame_lines);
	free(f->title);
	free(f->subtitle);
	free(f);
}

int flame_set_title(struct flame *f, const char *title, const char *subtitle)
{
	char *t = strdup(title ? title : ""), *s = strdup(subtitle ? subtitle : "");

	if (!t || !s) {
		free(t);
		free(s);
		return -ENOMEM;
	}
	free(f->title);
	free(f->subtitle);
	f->title = t;
	f->subtitle = s;
	return 0;
}

static int grow_nodes(struct flame_view *v)
{
	size_t cap = v->cap ? v->cap * 2 : 1024;
	uint32_t **u32[] = { &v->parent, &v->frame, &v->first_child, &v->next_sibling };

	for (size_t i = 0; i < 4; i++) {
		uint32_t *a = realloc(*u32[i], cap * sizeof(**u32[i]));

		if (!a)
			return -ENOMEM;
		*u32[i] = a;
	}
	for (size_t i = 0; i < 2; i++) {
		uint64_t *a = realloc(v->self[i], cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		v->self[i] = a;
	}
	v->cap = cap;
	return 0;
}

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

/* Rebuild the child index at twice the size (kept at most half full). */
static int grow_slots(struct flame_view *v)
{
	size_t n = v->nslots ? v->nslots * 2 : 2048;
	uint64_t *slots = calloc(n, sizeof(*slots));
	uint32_t *nodes = malloc(n * sizeof(*nodes));

	if (!slots || !nodes) {
		free(slots);
		free(nodes);
		return -ENOMEM;
	}
	for (size_t i = 0; i < v->nslots; i++) {
		size_t j;

		if (!v->slots[i])
			continue;
		for (j = mix(v->slots[i]) & (n - 1); slots[j]; j = (j + 1) & (n - 1))
			;
		slots[j] = v->slots[i];
		nodes[j] = v->slot_node[i];
	}
	free(v->slots);
	free(v->slot_node);
	v->slots = slots;
	v->slot_node = nodes;
	v->nslots = n;
	return 0;
}

static int64_t new_node(struct flame_view *v, uint32_t parent, uint32_t frame)
{
	uint32_t id = (uint32_t)v->nnodes;

	if (v->nnodes == v->cap && grow_nodes(v))
		return -ENOMEM;
	v->parent[id] = parent;
	v->frame[id] = frame;
	v->first_child[id] = v->next_sibling[id] = UINT32_MAX;
	v->self[0][id] = v->self[1][id] = 0;
	if (id) {
		v->next_sibling[id] = v->first_child[parent];
		v->first_child[parent] = id;
	}
	v->nnodes++;
	return id;
}

int flame_add_view(struct flame *f, const char *name, const char *unit, bool diff)
{
	struct flame_view *v;

	if (f->nviews == FLAME_MAX_VIEWS)
		return -ENOSPC;
	v = &f->views[f->nviews];
	memset(v, 0, sizeof(*v));
	v->diff = diff;
	v->name = strdup(name);
	v->unit = strdup(unit);
	f->nviews++;
	if (!v->name || !v->unit || new_node(v, 0, FLAME_ROOT_FRAME) < 0 || grow_slots(v))
		return -ENOMEM;
	return f->nviews - 1;
}

int64_t flame_frame(struct flame *f, const struct flame_frame_desc *d)
{
	struct frame_key k = {
		str_id(f, d->name), str_id(f, d->module), str_id(f, d->file), str_id(f, d->type),
	};
	int added = 0;
	int64_t id;

	if (k.name == UINT32_MAX || k.module == UINT32_MAX || k.file == UINT32_MAX || k.type == UINT32_MAX)
		return -ENOSPC;
	id = intern_put(f->frames, &k, sizeof(k), &added);
	if (id < 0 || !added)
		return id;
	if ((id & (id - 1)) == 0 || id == 0) {
		int64_t *a = realloc(f->frame_lines, (size_t)(id ? id * 2 : 1) * sizeof(*a));

		if (!a)
			return -ENOMEM;
		f->frame_lines = a;
	}
	f->frame_lines[id] = d->line;
	return id;
}

static const struct frame_key *frame_key(const struct flame *f, uint32_t frame)
{
	return intern_key(f->frames, frame, NULL);
}

const char *flame_frame_name(const struct flame *f, uint32_t frame)
{
	return str(f, frame_key(f, frame)->name);
}

const char *flame_frame_module(const struct flame *f, uint32_t frame)
{
	return str(f, frame_key(f, frame)->module);
}

const char *flame_frame_type(const struct flame *f, uint32_t frame)
{
	return str(f, frame_key(f, frame)->type);
}

/* The child of parent for frame, added when new. */
static int64_t child(struct flame *f, struct flame_view *v, uint32_t parent, uint32_t frame)
{
	uint64_t key = ((uint64_t)parent << 32 | frame) + 1;
	size_t j;
	int64_t id;

	for (j = mix(key) & (v->nslots - 1); v->slots[j]; j = (j + 1) & (v->nslots - 1))
		if (v->slots[j] == key)
			return v->slot_node[j];
	if (v->nnodes >= f->max_nodes)
		return -ENOSPC;
	id = new_node(v, parent, frame);
	if (id < 0)
		return id;
	v->slots[j] = key;
	v->slot_node[j] = (uint32_t)id;
	if (v->nnodes * 2 > v->nslots && grow_slots(v))
		return -ENOMEM;
	return id;
}

int flame_add_stack(struct flame *f, int view, const uint32_t *frames, size_t n, unsigned slot, uint64_t value)
{
	struct flame_view *v = &f->views[view];
	uint32_t node = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t c;

		if (frames[i] >= intern_count(f->frames))
			return -EINVAL;
		c = child(f, v, node, frames[i]);
		if (c < 0) {
			if (c == -ENOSPC)
				f->dropped++;
			return (int)c;
		}
		node = (uint32_t)c;
	}
	v->self[slot & 1][node] += value;
	v->total[slot & 1] += value;
	return 0;
}

uint64_t flame_dropped(const struct flame *f)
{
	return f->dropped;
}

uint64_t flame_total(const struct flame *f, int view, unsigned slot)
{
	return f->views[view].total[slot & 1];
}

int flame_each_stack(const struct flame *f, int view, flame_stack_fn fn, void *ctx)
{
	const struct flame_view *v = &f->views[view];
	uint32_t *path = malloc((v->nnodes + 1) * sizeof(*path));
	size_t depth = 0;
	uint32_t node = 0;
	int r = 0;

	if (!path)
		return -ENOMEM;
	/* Depth first by the sibling links: path[] holds the frames from the root's child down. */
	for (;;) {
		if (node && (v->self[0][node] || v->self[1][node]) &&
		    (r = fn(ctx, path, depth, (const uint64_t[2]){ v->self[0][node], v->self[1][node] })))
			break;
		if (v->first_child[node] != UINT32_MAX) {
			node = v->first_child[node];
			path[depth++] = v->frame[node];
			continue;
		}
		while (node && v->next_sibling[node] == UINT32_MAX) {
			node = v->parent[node];
			depth--;
		}
		if (!node)
			break;
		node = v->next_sibling[node];
		path[depth - 1] = v->frame[node];
	}
	free(path);
	return r;
}

/* JSON string: quotes, backslashes and control characters escaped, and '<', '>', '&' as well so that
 * no name can close the <script> element the JSON sits in. */
static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(out, "\\%c", *c);
		else if (*c < 0x20 || *c == '<' || *c == '>' || *c == '&' || *c == 0x7f)
			fprintf(out, "\\u%04x", *c);
		else
			fputc(*c, out);
	}
	fputc('"', out);
}

struct ranked {
	uint32_t rank, node;
};

static int by_rank(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static const struct flame *sort_flame; /* by_name()'s context: qsort() has none */

static int by_name(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(flame_frame_name(sort_flame, x), flame_frame_name(sort_flame, y));

	return c ? c : (x < y ? -1 : x > y);
}

/* Frame ranks by name, so that siblings sort by name (as flame graphs do) with integer compares. */
static uint32_t *frame_ranks(const struct flame *f)
{
	size_t n = intern_count(f->frames);
	uint32_t *order = malloc(n * sizeof(*order)), *rank = malloc(n * sizeof(*rank));

	if (!order || !rank) {
		free(order);
		free(rank);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	sort_flame = f;
	qsort(order, n, sizeof(*order), by_name);
	sort_flame = NULL;
	for (size_t i = 0; i < n; i++)
		rank[order[i]] = (uint32_t)i;
	free(order);
	return rank;
}

/* Nodes in preorder with siblings by name: order[k] is the k-th node, index[node] its k. */
static int preorder(const struct flame_view *v, const uint32_t *rank, uint32_t *order, uint32_t *index)
{
	uint32_t *stack = malloc(v->nnodes * sizeof(*stack));
	struct ranked *kids = malloc(v->nnodes * sizeof(*kids));
	size_t top = 0, k = 0;

	if (!stack || !kids) {
		free(stack);
		free(kids);
		return -ENOMEM;
	}
	stack[top++] = 0;
	while (top) {
		uint32_t node = stack[--top];
		size_t nk = 0;

		index[node] = (uint32_t)k;
		order[k++] = node;
		for (uint32_t c = v->first_child[node]; c != UINT32_MAX; c = v->next_sibling[c])
			kids[nk++] = (struct ranked){ rank[v->frame[c]], c };
		qsort(kids, nk, sizeof(*kids), by_rank);
		while (nk)
			stack[top++] = kids[--nk].node;
	}
	free(stack);
	free(kids);
	return 0;
}

/* The tree's shape and frames as one string of base64url digits (JSON.parse reads a string at memory
 * speed, where millions of numbers take it seconds): per node after the root, how many levels up from
 * the previous node its parent is (one digit, or "_" and three digits past 62), then its frame in
 * digits fixed wide digits. Self values are sparse: [node, value, ...] for the nodes that have one. */
static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void put_digits(FILE *out, uint32_t v, unsigned digits)
{
	while (digits-- > 0)
		fputc(b64url[(v >> (6 * digits)) & 63], out);
}

static unsigned frame_digits(size_t nframes)
{
	unsigned d = 1;

	while (d < 5 && nframes > (1ULL << (6 * d)))
		d++;
	return d;
}

static void sparse_values(FILE *out, const char *name, const uint32_t *order, size_t n, const uint64_t *values)
{
	size_t last = 0;
	bool first = true;

	fprintf(out, ",\"%s\":[", name);
	for (size_t k = 0; k < n; k++) {
		if (!values[order[k]])
			continue;
		fprintf(out, "%s%zu,%" PRIu64, first ? "" : ",", k - last, values[order[k]]);
		first = false;
		last = k;
	}
	fputc(']', out);
}

static int write_view(const struct flame *f, const struct flame_view *v, const uint32_t *rank, FILE *out)
{
	uint32_t *order = malloc(v->nnodes * sizeof(*order)), *index = malloc(v->nnodes * sizeof(*index));
	uint32_t *depth = malloc(v->nnodes * sizeof(*depth));
	unsigned digits = frame_digits(intern_count(f->frames));
	int r = -ENOMEM;

	if (!order || !index || !depth || (r = preorder(v, rank, order, index)))
		goto out;
	fputs("{\"name\":", out);
	json_string(out, v->name);
	fputs(",\"unit\":", out);
	json_string(out, v->unit);
	fprintf(out, ",\"diff\":%s,\"total\":[%" PRIu64 ",%" PRIu64 "],\"n\":%zu,\"k\":%u,\"t\":\"",
		v->diff ? "true" : "false", v->total[0], v->total[1], v->nnodes, digits);
	depth[0] = 0;
	for (size_t k = 1; k < v->nnodes; k++) {
		uint32_t up;

		depth[k] = depth[index[v->parent[order[k]]]] + 1;
		up = depth[k - 1] + 1 - depth[k];
		if (up < 63) {
			put_digits(out, up, 1);
		} else {
			fputc('_', out);
			put_digits(out, up, 3);
		}
		put_digits(out, v->frame[order[k]], digits);
	}
	fputc('"', out);
	sparse_values(out, "v", order, v->nnodes, v->self[0]);
	if (v->diff)
		sparse_values(out, "w", order, v->nnodes, v->self[1]);
	fputc('}', out);
	r = 0;
out:
	free(order);
	free(index);
	free(depth);
	return r;
}

int flame_write_json(const struct flame *f, FILE *out)
{
	size_t nframes = intern_count(f->frames);
	uint32_t *rank = frame_ranks(f);
	int r = 0;

	if (!rank)
		return -ENOMEM;
	fputs("{\"title\":", out);
	json_string(out, f->title ? f->title : "");
	fputs(",\"subtitle\":", out);
	json_string(out, f->subtitle ? f->subtitle : "");
	fprintf(out, ",\"dropped\":%" PRIu64 ",\"strings\":[", f->dropped);
	for (size_t i = 0; i < intern_count(f->strings); i++) {
		if (i)
			fputc(',', out);
		json_string(out, str(f, (uint32_t)i));
	}
	/* Five numbers a frame: name, module, file (string ids), line, type (string id). */
	fputs("],\"frames\":[", out);
	for (size_t i = 0; i < nframes; i++) {
		const struct frame_key *k = frame_key(f, (uint32_t)i);

		fprintf(out, "%s%u,%u,%u,%" PRId64 ",%u", i ? "," : "", k->name, k->module, k->file,
			f->frame_lines[i], k->type);
	}
	fputs("],\"views\":[", out);
	for (int i = 0; i < f->nviews && !r; i++) {
		if (i)
			fputc(',', out);
		r = write_view(f, &f->views[i], rank, out);
	}
	fputs("]}", out);
	free(rank);
	if (!r && ferror(out))
		r = -EIO;
	return r;
}
