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
 * entries) is looked through. Every read is bpf_probe_read_user(); a failed one ends the walk
 * (counted). The slots are walked by bpf_loop() (Linux 5.17+; without it the daemon does not load
 * the reader, daemon/sampling/sampler.c).
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

/* State of the label walk, on the caller's stack: bpf_loop() calls go_label_step() once per slot. */
struct go_label_loop {
	struct otelprof_go_labels *out;
	__u64 base;    /* Go 1.24+: the slice's entries; Go <= 1.23: the map's first bucket */
	__u64 tophash; /* Go <= 1.23: the bucket's 8 tophash bytes, slot 0 lowest */
	__u64 len;     /* Go 1.24+: the slice's length */
	__u8 layout;   /* enum otelprof_go_layout */
	__u8 error;    /* a read failed */
};

/* One slot of the slice or of the bucket: its label into out->label[n]. 0: go on, 1: stop. */
static long go_label_step(__u64 i, void *data)
{
	struct go_label_loop *l = data;
	struct otelprof_go_label *label;
	struct go_string kv[2];
	/* Counted in the map value, not on the stack: the verifier then sees one state per step,
	 * whatever the count. */
	__u32 n = l->out->count;

	if (n >= OTELPROF_GO_MAX_LABELS || i >= GO_BUCKET_SLOTS)
		return 1;
	if (l->layout == OTELPROF_GO_LABELS_SLICE) {
		if (i >= l->len)
			return 1;
		if (bpf_probe_read_user(kv, sizeof(kv), (const void *)(l->base + i * sizeof(kv))))
			goto failed;
	} else {
		if (((l->tophash >> (i * 8)) & 0xff) < GO_MIN_TOPHASH)
			return 0;
		if (bpf_probe_read_user(&kv[0], sizeof(kv[0]), (const void *)(l->base + GO_BUCKET_KEYS + i * 16)) ||
		    bpf_probe_read_user(&kv[1], sizeof(kv[1]), (const void *)(l->base + GO_BUCKET_VALUES + i * 16)))
			goto failed;
	}
	label = &l->out->label[n];
	label->cut = 0;
	label->key_len = go_copy_string(label->key, &kv[0], &label->cut);
	label->value_len = go_copy_string(label->value, &kv[1], &label->cut);
	if (!label->key_len)
		goto failed; /* an unreadable (or empty) key: nothing to name the label by */
	if (label->cut)
		count(OTELPROF_CNT_GO_LABELS_CUT);
	l->out->count = n + 1;
	return 0;
failed:
	l->error = 1;
	return 1;
}

/*
 * Where the labels are, into *l: Go 1.24+, labels -> slice header {ptr, len, cap} of {key, value
 * string}; Go 1.19-1.23, labels -> *map[string]string -> hmap, of which the first bucket is looked
 * through: a map of up to 8 entries (OTELPROF_GO_MAX_LABELS) has one bucket (B = 0: Go grows a map
 * past 8 entries only); of a larger map, the labels in the other buckets are counted as dropped.
 * The labels the goroutine has, or -1 on a failed read.
 */
static __always_inline __s64 go_labels_where(__u64 labels, struct go_label_loop *l)
{
	struct go_hmap h;
	__u64 hdr[2]; /* ptr, len */

	if (l->layout == OTELPROF_GO_LABELS_SLICE) {
		if (bpf_probe_read_user(hdr, sizeof(hdr), (const void *)labels))
			return -1;
		l->base = hdr[0];
		l->len = hdr[1];
		return (__s64)hdr[1];
	}
	labels = go_read_ptr(labels);
	if (!labels)
		return 0; /* a nil map: no labels */
	if (bpf_probe_read_user(&h, sizeof(h), (const void *)labels))
		return -1;
	if (h.count <= 0 || !h.buckets)
		return 0;
	l->base = h.buckets;
	if (bpf_probe_read_user(&l->tophash, sizeof(l->tophash), (const void *)h.buckets))
		return -1;
	return h.count;
}

/*
 * The labels of the goroutine a thread runs (fs_base its thread pointer) into out: the bytes of the
 * tail (sizeof(*out)), or 0 when it has none (no user goroutine, no labels) or a read failed
 * (counted). The slots are walked by bpf_loop(): the verifier checks one step.
 */
static __always_inline __u32 go_labels_read(const struct otelprof_go_proc *gp, __u64 fsbase,
					    struct otelprof_go_labels *out)
{
	struct go_label_loop l = { .out = out, .layout = gp->layout };
	__u64 g, m, curg, labels;
	__s64 total;

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
	out->count = 0;
	total = go_labels_where(labels, &l);
	if (total > 0)
		bpf_loop(GO_BUCKET_SLOTS, go_label_step, &l, 0);
	if (total < 0 || l.error) {
		count(OTELPROF_CNT_GO_READ_ERROR);
		return 0;
	}
	if (!out->count || out->count > OTELPROF_GO_MAX_LABELS)
		return 0;
	out->dropped = total > out->count ? (__u32)(total - out->count) : 0;
	if (out->dropped)
		count(OTELPROF_CNT_GO_LABELS_DROPPED);
	count(OTELPROF_CNT_GO_LABELLED);
	return sizeof(*out);
}

#endif
