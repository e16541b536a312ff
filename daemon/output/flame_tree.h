/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A flame graph's data: stacks merged into trees of frames (one tree per view: on-CPU, off-CPU, or
 * a diff's base and new side by side), written as the compact JSON the HTML page reads
 * (output/html_page.h).
 *
 * Frames are distinct (name, module, file, type) and their strings are interned once. A tree node is
 * a frame under its parent; its self values (two slots: a diff's base and new, else slot 0) are what
 * stacks ending there weigh. The first frame of every stack is its process (type "process", module
 * the service name), so the page can filter by process and by service.
 *
 * Bounded: past max_nodes new nodes (or past the string and frame bounds), a stack is left out and
 * counted in flame_dropped(). flame_free() frees everything; strings passed in are copied.
 */
#ifndef OTELPROFD_FLAME_TREE_H
#define OTELPROFD_FLAME_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FLAME_MAX_VIEWS 8
#define FLAME_DEFAULT_MAX_NODES (8u << 20)

struct flame;

/* A frame as given to flame_frame(); NULL strings are "". */
struct flame_frame_desc {
	const char *name;
	const char *module; /* file basename, kernel module, or for a process frame its service name */
	const char *file;   /* source file */
	int64_t line;       /* a line in file, 0 when unknown */
	const char *type;   /* "native", "kernel", "inlined", "go", "process", ... (the page colours by it) */
};

struct flame *flame_new(size_t max_nodes);
void flame_free(struct flame *f);

/* Page title and a line of context under it (copied). */
int flame_set_title(struct flame *f, const char *title, const char *subtitle);
/*
 * A new view; returns its index or a negative errno. name: shown on its tab ("On-CPU"); unit: what
 * the values count ("samples", "ns"); diff: the view compares slot 0 (base) with slot 1 (new).
 */
int flame_add_view(struct flame *f, const char *name, const char *unit, bool diff);
/* Id of a frame (added when new), or a negative errno. */
int64_t flame_frame(struct flame *f, const struct flame_frame_desc *d);
/* The frame with id: its name, module and type strings. */
const char *flame_frame_name(const struct flame *f, uint32_t frame);
const char *flame_frame_module(const struct flame *f, uint32_t frame);
const char *flame_frame_type(const struct flame *f, uint32_t frame);

/* Add value to slot of the stack frames[0..n) (root first: the process frame, then callers to the
 * leaf). 0, -ENOSPC when a bound left it out (counted), -ENOMEM. */
int flame_add_stack(struct flame *f, int view, const uint32_t *frames, size_t n, unsigned slot, uint64_t value);

/* Stacks left out by a bound. */
uint64_t flame_dropped(const struct flame *f);
/* Sum of slot over the view's stacks. */
uint64_t flame_total(const struct flame *f, int view, unsigned slot);

/*
 * Each node with a non-zero self value, in the order of the tree: its frames root first (frames[0..n),
 * valid during the call) and its two self values. Stops at, and returns, the first non-zero return.
 */
typedef int (*flame_stack_fn)(void *ctx, const uint32_t *frames, size_t n, const uint64_t self[2]);
int flame_each_stack(const struct flame *f, int view, flame_stack_fn fn, void *ctx);

/* The JSON the page reads. 0 or a negative errno (a failed write). */
int flame_write_json(const struct flame *f, FILE *out);

#endif
