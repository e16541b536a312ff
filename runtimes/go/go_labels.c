// SPDX-License-Identifier: Apache-2.0
#include "go_labels.h"

#include <string.h>

/* Bytes of trace and span id that start a link (the aggregate's AGG_LINK_IDS). */
#define LINK_IDS 24

/* The kept bytes of a key or value up to its first NUL (a NUL ends an attribute in the link). */
static size_t part_len(const char *s, uint8_t len)
{
	return strnlen(s, len < OTELPROF_GO_LABEL_LEN ? len : OTELPROF_GO_LABEL_LEN);
}

static int compare_keys(const struct otelprof_go_label *a, const struct otelprof_go_label *b)
{
	size_t la = part_len(a->key, a->key_len), lb = part_len(b->key, b->key_len);
	int c = memcmp(a->key, b->key, la < lb ? la : lb);

	return c ? c : (la > lb) - (la < lb);
}

size_t go_labels_link(const void *data, size_t size, uint8_t *link, size_t len, size_t max,
		      struct go_labels_counters *c)
{
	const struct otelprof_sample *s = data;
	const struct otelprof_go_labels *gl;
	const struct otelprof_go_label *order[OTELPROF_GO_MAX_LABELS];
	size_t end, n = 0;

	if (size < sizeof(*s) || !(s->flags & OTELPROF_SAMPLE_GO_LABELS))
		return len;
	end = s->hdr.size - ((s->flags & OTELPROF_SAMPLE_TRACE_CTX) ? sizeof(struct otelprof_trace_ctx) : 0);
	if (s->hdr.size > size || end > s->hdr.size || end < sizeof(*s) + sizeof(*gl)) {
		c->malformed++;
		return len;
	}
	gl = (const void *)((const uint8_t *)data + end - sizeof(*gl));
	if (!gl->count || gl->count > OTELPROF_GO_MAX_LABELS) {
		c->malformed++;
		return len;
	}
	c->dropped += gl->dropped;
	/* Insertion sort of at most 8, by key. */
	for (uint32_t i = 0; i < gl->count; i++) {
		const struct otelprof_go_label *l = &gl->label[i];
		size_t at = n;

		if (l->cut)
			c->cut++;
		if (!part_len(l->key, l->key_len)) {
			c->dropped++;
			continue;
		}
		while (at && compare_keys(order[at - 1], l) > 0) {
			order[at] = order[at - 1];
			at--;
		}
		order[at] = l;
		n++;
	}
	if (!n)
		return len;
	if (!len) {
		if (max < LINK_IDS)
			return 0;
		memset(link, 0, LINK_IDS);
		len = LINK_IDS;
	}
	c->samples++;
	for (size_t i = 0; i < n; i++) {
		size_t kl = part_len(order[i]->key, order[i]->key_len), vl = part_len(order[i]->value, order[i]->value_len);

		if (max - len < kl + vl + 2) {
			c->dropped += n - i;
			break;
		}
		memcpy(link + len, order[i]->key, kl);
		link[len + kl] = '\0';
		memcpy(link + len + kl + 1, order[i]->value, vl);
		link[len + kl + 1 + vl] = '\0';
		len += kl + vl + 2;
		c->labels++;
	}
	return len;
}
