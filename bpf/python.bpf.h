/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * CPython frames at sample time (included by profile.bpf.c; docs/python.md). For a process whose
 * per-process entry has a Python part, find the sampled thread's PyThreadState in the main
 * interpreter's thread list (by native_thread_id: every thread, not only the one holding the GIL),
 * then walk its frame chain from the current frame through `previous`, recording each frame's code
 * object and instruction pointer, and an entry marker at each boundary of the interpreter's C calls.
 * Names, files and lines are read from the code objects in user space.
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
	__u32 pad;
};

static __always_inline __u64 py_word(const struct py_walk *w, __u8 off)
{
	return *(const __u64 *)(w->frame + (off & 127));
}

/* The thread state of tid in the main interpreter, or 0. */
static __always_inline __u64 py_thread_state(const struct otelprof_python_proc *py, __u32 tid)
{
	__u64 interp = 0, ts = 0, native = 0;

	if (bpf_probe_read_user(&interp, sizeof(interp), (const void *)py->interp_head) || !interp ||
	    bpf_probe_read_user(&ts, sizeof(ts), (const void *)(interp + py->interp_threads_head)))
		return 0;
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
 * The thread's Python frames into out (room for OTELPROF_PYTHON_MAX_SLOTS): returns the slots
 * written, 0 when the thread has no Python frames or they cannot be read (counted).
 */
static __always_inline __u32 python_stack(const struct otelprof_python_proc *py, __u32 tid,
					  struct otelprof_python_frame *out, struct py_walk *w)
{
	__u64 ts = py_thread_state(py, tid), frame = 0;
	int i;

	if (!ts) {
		count(OTELPROF_CNT_PYTHON_NO_THREAD);
		return 0;
	}
	if (bpf_probe_read_user(&frame, sizeof(frame), (const void *)(ts + py->tstate_frame)))
		goto read_error;
	if (py->cframe_frame != OTELPROF_PYTHON_NONE && frame &&
	    bpf_probe_read_user(&frame, sizeof(frame), (const void *)(frame + py->cframe_frame)))
		goto read_error;
	w->slots = 0;
	for (i = 0; i < OTELPROF_PYTHON_MAX_WALK && frame; i++) {
		__u8 owner;

		if (bpf_probe_read_user(w->frame, PY_FRAME_READ, (const void *)frame))
			goto read_error;
		owner = w->frame[py->frame_owner & 127];
		if (py->owner_cstack != OTELPROF_PYTHON_NONE && owner == py->owner_cstack) {
			if (!py_put(out, w, 0, 0))
				break;
		} else {
			if (!py_put(out, w, py_word(w, py->frame_code), py_word(w, py->frame_instr)))
				break;
			if (py->frame_is_entry != OTELPROF_PYTHON_NONE && w->frame[py->frame_is_entry & 127] &&
			    !py_put(out, w, 0, 0))
				break;
		}
		frame = py_word(w, py->frame_previous);
	}
	if (frame)
		count(OTELPROF_CNT_PYTHON_TRUNCATED);
	count(OTELPROF_CNT_PYTHON_STACKS);
	return w->slots;
read_error:
	count(OTELPROF_CNT_PYTHON_READ_ERROR);
	return 0;
}

#endif
