/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The Go room's BPF part: the pprof labels (pprof.Do, pprof.SetGoroutineLabels) of the goroutine a
 * sampled thread runs, read at the sample. Included by bpf/profile.bpf.c into go_read_labels, the
 * program on_cpu_sample tail-calls for the processes of the map go_procs only: no other sample runs
 * or costs the verifier this code.
 *
 * The walk: g at fs_base + g_tls (the thread's current g: a user goroutine, g0 or gsignal), then
 * g.m.curg (the user goroutine of the thread's M, also while on the system or signal stack; 0 when
 * there is none), then curg.labels. Go 1.24+ keeps there a slice of {key, value string}; Go
 * 1.19-1.23 a pointer to a map[string]string, whose first bucket (8 slots: all of a map of up to 8
 * entries) is looked through. Every read is bpf_probe_read_user(); a failed one ends the walk (counted).
 */
#ifndef OTELPROF_GO_LABELS_BPF_H
#define OTELPROF_GO_LABELS_BPF_H

/* A Go string header. */
struct go_string {
	__u64 ptr;
	__s64 len;
};

/* runtime.hmap's first fields (Go 1.19-1.23), and a map[string]string bucket's layout. */
struct go_hmap {
	__s64 count;
	__u8 flags;
	__u8 B;
	__u16 noverflow;
	__u32 hash0;
	__u64 buckets;
	__u64 oldbuckets;
};
#define GO_BUCKET_SLOTS 8
#define GO_BUCKET_KEYS 8
#define GO_BUCKET_VALUES (8 + GO_BUCKET_SLOTS * 16)
#define GO_MIN_TOPHASH 5 /* below: an empty or evacuated slot */

static __always_inline __u64 go_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/* Copy up to OTELPROF_GO_LABEL_LEN bytes of a Go string to dst: the bytes kept; *cut set when cut. */
static __always_inline __u8 go_copy_string(char *dst, const struct go_string *s, __u8 *cut)
{
	__u64 n = s->len < 0 ? 0 : (__u64)s->len;

	if (n > OTELPROF_GO_LABEL_LEN) {
		n = OTELPROF_GO_LABEL_LEN;
		*cut = 1;
	}
	barrier_var(n);
	if (n > OTELPROF_GO_LABEL_LEN)
		n = 0;
	if (n && bpf_probe_read_user(dst, n, (const void *)s->ptr))
		return 0;
	return (__u8)n;
}

/*
 * The walk is in two passes, so the verifier checks a short loop each time: the first finds the
 * labels and keeps each one's two string headers in its own slot of out (in the room of its key),
 * the second copies the strings over them.
 */
static __always_inline void go_stash(struct otelprof_go_labels *out, __u32 i, const struct go_string *kv)
{
	if (i < OTELPROF_GO_MAX_LABELS)
		__builtin_memcpy(out->label[i].key, kv, 2 * sizeof(*kv));
}

/* The second pass: the n labels' bytes. 0, or -1 when a read failed. */
static __always_inline int go_copy_labels(struct otelprof_go_labels *out, __u32 n)
{
	for (__u32 i = 0; i < OTELPROF_GO_MAX_LABELS; i++) {
		struct otelprof_go_label *l = &out->label[i];
		struct go_string kv[2];

		if (i >= n)
			break;
		__builtin_memcpy(kv, l->key, sizeof(kv));
		l->cut = 0;
		l->key_len = go_copy_string(l->key, &kv[0], &l->cut);
		l->value_len = go_copy_string(l->value, &kv[1], &l->cut);
		if (!l->key_len)
			return -1; /* an unreadable (or empty) key: nothing to name the label by */
		if (l->cut)
			count(OTELPROF_CNT_GO_LABELS_CUT);
	}
	return 0;
}

/* Go 1.24+: labels -> slice header of {key, value string}. Labels found, or -1 on a failed read. */
static __always_inline int go_labels_slice(__u64 labels, struct otelprof_go_labels *out)
{
	struct go_string kv[2];
	__u64 hdr[2]; /* ptr, len */
	__u32 n = 0;

	if (bpf_probe_read_user(hdr, sizeof(hdr), (const void *)labels))
		return -1;
	if ((__s64)hdr[1] <= 0)
		return 0;
	for (__u32 i = 0; i < OTELPROF_GO_MAX_LABELS; i++) {
		if (i >= hdr[1])
			break;
		if (bpf_probe_read_user(kv, sizeof(kv), (const void *)(hdr[0] + i * sizeof(kv))))
			return -1;
		go_stash(out, i, kv);
		n = i + 1;
	}
	out->dropped = hdr[1] > n ? (__u32)(hdr[1] - n) : 0;
	return (int)n;
}

/*
 * Go 1.19-1.23: labels -> *map[string]string -> hmap. Labels found, or -1 on a failed read. Only
 * the first bucket is looked through: a map of up to 8 entries (OTELPROF_GO_MAX_LABELS) has one
 * bucket (B = 0: Go grows a map past 8 entries only); of a larger map, the labels in the other
 * buckets are counted as dropped.
 */
static __always_inline int go_labels_map(__u64 labels, struct otelprof_go_labels *out)
{
	__u64 hmap = go_read_ptr(labels), tophash = 0; /* the bucket's 8 tophash bytes, slot 0 lowest */
	struct go_string kv[2];
	struct go_hmap h;
	__u32 n = 0;

	if (!hmap)
		return 0; /* a nil map: no labels */
	if (bpf_probe_read_user(&h, sizeof(h), (const void *)hmap))
		return -1;
	if (h.count <= 0 || !h.buckets)
		return 0;
	if (bpf_probe_read_user(&tophash, sizeof(tophash), (const void *)h.buckets))
		return -1;
	for (__u32 slot = 0; slot < GO_BUCKET_SLOTS; slot++) {
		if (((tophash >> (slot * 8)) & 0xff) < GO_MIN_TOPHASH)
			continue;
		if (bpf_probe_read_user(&kv[0], sizeof(kv[0]), (const void *)(h.buckets + GO_BUCKET_KEYS + slot * 16)) ||
		    bpf_probe_read_user(&kv[1], sizeof(kv[1]), (const void *)(h.buckets + GO_BUCKET_VALUES + slot * 16)))
			return -1;
		go_stash(out, n, kv);
		n++;
	}
	out->dropped = (__u64)h.count > n ? (__u32)(h.count - n) : 0;
	return (int)n;
}

/*
 * The labels of the goroutine a thread runs (fs_base its thread pointer) into out: the bytes of the
 * tail (sizeof(*out)), or 0 when it has none (no user goroutine, no labels) or a read failed
 * (counted). A global function: the verifier checks it once, on its own, and not once for every
 * state of the sampler that calls it.
 */
__noinline __u32 go_labels_read(const struct otelprof_go_proc *gp, __u64 fsbase, struct otelprof_go_labels *out)
{
	__u64 g, m, curg, labels;
	int n;

	if (!gp || !out)
		return 0;
	g = go_read_ptr(fsbase + (__s64)gp->g_tls);
	m = g ? go_read_ptr(g + gp->g_m) : 0;
	curg = m ? go_read_ptr(m + gp->m_curg) : 0;
	if (!g || !m) {
		count(OTELPROF_CNT_GO_READ_ERROR);
		return 0;
	}
	if (!curg)
		return 0; /* the system stack of a thread without a user goroutine */
	labels = go_read_ptr(curg + gp->g_labels);
	if (!labels)
		return 0;
	out->dropped = 0;
	n = gp->layout == OTELPROF_GO_LABELS_SLICE ? go_labels_slice(labels, out) : go_labels_map(labels, out);
	if (n < 0) {
		count(OTELPROF_CNT_GO_READ_ERROR);
		return 0;
	}
	if (!n)
		return 0;
	if (go_copy_labels(out, (__u32)n)) {
		count(OTELPROF_CNT_GO_READ_ERROR);
		return 0;
	}
	out->count = (__u32)n;
	if (out->dropped)
		count(OTELPROF_CNT_GO_LABELS_DROPPED);
	count(OTELPROF_CNT_GO_LABELLED);
	return sizeof(*out);
}

#endif
