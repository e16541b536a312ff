// SPDX-License-Identifier: Apache-2.0
#include "export/export_queue.h"

#include <errno.h>
#include <stdlib.h>

int export_queue_init(struct export_queue *q, size_t max_items, size_t max_bytes)
{
	*q = (struct export_queue){ .max_items = max_items ? max_items : 1, .max_bytes = max_bytes };
	q->items = calloc(q->max_items, sizeof(*q->items));
	return q->items ? 0 : -ENOMEM;
}

static void drop_oldest(struct export_queue *q)
{
	struct export_item it;

	if (export_queue_pop(q, &it)) {
		q->dropped++;
		q->dropped_samples += it.nsamples;
		free(it.data);
	}
}

void export_queue_drop_all(struct export_queue *q)
{
	while (q->count)
		drop_oldest(q);
}

void export_queue_destroy(struct export_queue *q)
{
	if (!q->items)
		return;
	export_queue_drop_all(q);
	free(q->items);
	q->items = NULL;
}

int export_queue_push(struct export_queue *q, struct export_item item)
{
	if (item.len > q->max_bytes) {
		q->dropped++;
		q->dropped_samples += item.nsamples;
		free(item.data);
		return -E2BIG;
	}
	while (q->count && (q->count == q->max_items || q->bytes + item.len > q->max_bytes))
		drop_oldest(q);
	q->items[(q->head + q->count) % q->max_items] = item;
	q->count++;
	q->bytes += item.len;
	return 0;
}

bool export_queue_pop(struct export_queue *q, struct export_item *item)
{
	if (!q->count)
		return false;
	*item = q->items[q->head];
	q->items[q->head] = (struct export_item){ 0 };
	q->head = (q->head + 1) % q->max_items;
	q->count--;
	q->bytes -= item->len;
	return true;
}
