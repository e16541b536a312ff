/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * CPython frames at sample time (included by profile.bpf.c; docs/python.md). For a process whose
 * per-process entry has a Python part, find the sampled thread's PyThreadState in the main
 * interpreter's thread list (by native_thread_id: every thread, not only the one holding the GIL),
 * then walk its frame chain from the current frame through `previous`, recording each frame's code
 * object and instruction pointer, and an entry marker at each boundary of the interpreter's C calls.
 * Names, files and lines are read from the code objects in user space.
 *
 * The walk runs in its own programs, tail-called by on_cpu_sample for Python processes only, in two
 * forms: with bpf_loop() (Linux 5.17+), whose step the verifier checks once, and with bounded loops
 * for older kernels, which the verifier unrolls path by path (about 50,000 instructions at load).
 */
#ifndef OTELPROF_PYTHON_BPF_H
#define OTELPROF_PYTHON_BPF_H

/* Bytes of an interpreter frame read at once: every field the walk needs lies in the first 72. */
#define PY_FRAME_READ 72

/* The frame's bytes, read in one go; variable offsets index them, masked to 127 (the array has room
 * for a word there). */
struct py_walk {
	__u8 frame[128 + 8];
	__u32 slots; /* slots written: kept in memory so the verifier prunes the loop's paths */
	__u32 tail;  /* on_cpu_sample -> the walk: bytes after the sample so far (stack window) */
};

static __always_inline __u64 py_word(const struct py_walk *w, __u8 off)
{
	return *(const __u64 *)(w->frame + (off & 127));
}

/* Put one slot at out[w->slots]: false when the slots are full. */
static __always_inline bool py_put(struct otelprof_python_frame *out, struct py_walk *w, __u64 code, __u64 instr)
{
	__u32 i = *(volatile __u32 *)&w->slots;

	if (i >= OTELPROF_PYTHON_MAX_SLOTS)
		return false;
	out[i].code = code;
	out[i].instr = instr;
	w->slots = i + 1;
	return true;
}

/*
 * The slots of the frame read into w->frame: its code object and instruction, and an entry marker
 * after a 3.11 entry frame, or a marker alone for a 3.12+ C-stack shim. false when the slots are full.
 */
static __always_inline bool py_frame_slots(const struct otelprof_python_proc *py, struct otelprof_python_frame *out,
					   struct py_walk *w)
{
	__u8 owner = w->frame[py->frame_owner & 127];

	if (py->owner_cstack != OTELPROF_PYTHON_NONE && owner == py->owner_cstack)
		return py_put(out, w, 0, 0);
	if (!py_put(out, w, py_word(w, py->frame_code), py_word(w, py->frame_instr)))
		return false;
	if (py->frame_is_entry != OTELPROF_PYTHON_NONE && w->frame[py->frame_is_entry & 127])
		return py_put(out, w, 0, 0);
	return true;
}

/* The innermost frame of thread state ts, or 0 (none: read_error says whether it was unreadable). */
static __always_inline __u64 py_current_frame(const struct otelprof_python_proc *py, __u64 ts, bool *read_error)
{
	__u64 frame = 0;

	*read_error = true;
	if (bpf_probe_read_user(&frame, sizeof(frame), (const void *)(ts + py->tstate_frame)))
		return 0;
	if (py->cframe_frame != OTELPROF_PYTHON_NONE && frame &&
	    bpf_probe_read_user(&frame, sizeof(frame), (const void *)(frame + py->cframe_frame)))
		return 0;
	*read_error = false;
	return frame;
}

/* The main interpreter's first thread state, or 0. */
static __always_inline __u64 py_first_thread(const struct otelprof_python_proc *py)
{
	__u64 interp = 0, ts = 0;

	if (bpf_probe_read_user(&interp, sizeof(interp), (const void *)py->interp_head) || !interp ||
	    bpf_probe_read_user(&ts, sizeof(ts), (const void *)(interp + py->interp_threads_head)))
		return 0;
	return ts;
}

/* Counts the end of a walk that wrote w->slots (frame: where it stopped, 0 at the chain's end). */
static __always_inline __u32 py_walk_done(const struct py_walk *w, __u64 frame, bool read_error)
{
	if (read_error) {
		count(OTELPROF_CNT_PYTHON_READ_ERROR);
		return 0;
	}
	if (frame)
		count(OTELPROF_CNT_PYTHON_TRUNCATED);
	count(OTELPROF_CNT_PYTHON_STACKS);
	return w->slots;
}

/* ---- With bounded loops (kernels before 5.17) ---- */

/* The thread state of tid in the main interpreter, or 0. */
static __always_inline __u64 py_thread_state_bounded(const struct otelprof_python_proc *py, __u32 tid)
{
	__u64 ts = py_first_thread(py), native = 0;

	for (int i = 0; i < OTELPROF_PYTHON_MAX_THREADS && ts; i++) {
		if (bpf_probe_read_user(&native, sizeof(native), (const void *)(ts + py->tstate_native_tid)))
			return 0;
		if ((__u32)native == tid)
			return ts;
		if (bpf_probe_read_user(&ts, sizeof(ts), (const void *)(ts + py->tstate_next)))
			return 0;
	}
	return 0;
}

/*
 * The thread's Python frames into out (room for OTELPROF_PYTHON_MAX_SLOTS): returns the slots
 * written, 0 when the thread has no Python frames or they cannot be read (counted).
 */
static __always_inline __u32 python_stack_bounded(const struct otelprof_python_proc *py, __u32 tid,
						  struct otelprof_python_frame *out, struct py_walk *w)
{
	__u64 ts = py_thread_state_bounded(py, tid), frame;
	bool read_error;

	if (!ts) {
		count(OTELPROF_CNT_PYTHON_NO_THREAD);
		return 0;
	}
	frame = py_current_frame(py, ts, &read_error);
	w->slots = 0;
	for (int i = 0; i < OTELPROF_PYTHON_MAX_WALK && frame && !read_error; i++) {
		if (bpf_probe_read_user(w->frame, PY_FRAME_READ, (const void *)frame)) {
			read_error = true;
			break;
		}
		if (!py_frame_slots(py, out, w))
			break;
		frame = py_word(w, py->frame_previous);
	}
	return py_walk_done(w, frame, read_error);
}

/* ---- With bpf_loop() (5.17+): each step is a callback, verified once ---- */

/* State of the thread-state search, on the caller's stack. */
struct py_threads_loop {
	const struct otelprof_python_proc *py;
	__u64 ts;    /* the thread state looked at; the found one when found */
	__u32 tid;   /* the thread sought */
	__u32 found; /* 1: ts is tid's */
};

static long py_thread_step(__u64 index, void *data)
{
	struct py_threads_loop *l = data;
	__u64 native = 0;

	if (!l->ts || bpf_probe_read_user(&native, sizeof(native), (const void *)(l->ts + l->py->tstate_native_tid)))
		return 1;
	if ((__u32)native == l->tid) {
		l->found = 1;
		return 1;
	}
	if (bpf_probe_read_user(&l->ts, sizeof(l->ts), (const void *)(l->ts + l->py->tstate_next)))
		return 1;
	return 0;
}

/* State of the frame walk, on the caller's stack. */
struct py_frames_loop {
	const struct otelprof_python_proc *py;
	struct otelprof_python_frame *out;
	struct py_walk *w;
	__u64 frame;      /* the next frame to read; 0: the chain ended */
	__u32 read_error; /* 1: a frame was unreadable */
	__u32 pad;
};

static long py_frame_step(__u64 index, void *data)
{
	struct py_frames_loop *l = data;

	if (!l->frame)
		return 1;
	if (bpf_probe_read_user(l->w->frame, PY_FRAME_READ, (const void *)l->frame)) {
		l->read_error = 1;
		return 1;
	}
	if (!py_frame_slots(l->py, l->out, l->w))
		return 1;
	l->frame = py_word(l->w, l->py->frame_previous);
	return 0;
}

/* python_stack_bounded()'s walk, its loops run by bpf_loop(). */
static __always_inline __u32 python_stack_loop(const struct otelprof_python_proc *py, __u32 tid,
					       struct otelprof_python_frame *out, struct py_walk *w)
{
	struct py_threads_loop threads = { .py = py, .ts = py_first_thread(py), .tid = tid };
	struct py_frames_loop frames = { .py = py, .out = out, .w = w };
	bool read_error;

	bpf_loop(OTELPROF_PYTHON_MAX_THREADS, py_thread_step, &threads, 0);
	if (!threads.found) {
		count(OTELPROF_CNT_PYTHON_NO_THREAD);
		return 0;
	}
	frames.frame = py_current_frame(py, threads.ts, &read_error);
	w->slots = 0;
	if (!read_error)
		bpf_loop(OTELPROF_PYTHON_MAX_WALK, py_frame_step, &frames, 0);
	return py_walk_done(w, frames.frame, read_error || frames.read_error);
}

#endif
