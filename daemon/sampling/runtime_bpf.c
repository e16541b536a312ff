// SPDX-License-Identifier: Apache-2.0
#include "sampling/runtime_bpf.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>

#include "clock.h"
#include "log.h"
#include "profile.skel.h"
#include "sampling/privileges.h"

static const char *const part_names[RUNTIME_BPF_PARTS] = { [RUNTIME_BPF_PYTHON] = "python", [RUNTIME_BPF_GO] = "go" };
/* The prog array each part is tail-called through (bpf/profile.bpf.c). */
static const char *const part_slots[RUNTIME_BPF_PARTS] = {
	[RUNTIME_BPF_PYTHON] = "python_walker", [RUNTIME_BPF_GO] = "go_labeler",
};

const char *runtime_bpf_name(enum runtime_bpf_id id)
{
	return id < RUNTIME_BPF_PARTS ? part_names[id] : "?";
}

void runtime_bpf_init(struct runtime_bpf *rb, struct profile_bpf *main)
{
	memset(rb, 0, sizeof(*rb));
	rb->main = main;
	for (int i = 0; i < RUNTIME_BPF_PARTS; i++)
		rb->parts[i] = (struct runtime_bpf_part){ .name = part_names[i], .slot = part_slots[i] };
}

void runtime_bpf_want(struct runtime_bpf *rb, enum runtime_bpf_id id, const char *program)
{
	rb->parts[id].program = program;
	rb->parts[id].stats.state = RUNTIME_BPF_WAITING;
}

bool runtime_bpf_waiting(const struct runtime_bpf *rb)
{
	for (int i = 0; i < RUNTIME_BPF_PARTS; i++)
		if (rb->parts[i].stats.state == RUNTIME_BPF_WAITING)
			return true;
	return false;
}

uint64_t bpf_verified_insns(struct bpf_object *obj)
{
	struct bpf_program *prog;
	uint64_t total = 0;

	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		memset(&info, 0, sizeof(info));
		if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
			log_debug("BPF program %s: %u instructions verified", bpf_program__name(prog), info.verified_insns);
			total += info.verified_insns;
		}
	}
	return total;
}

/* Open a new instance of the object with only p's program to load and every map the main
 * instance's. 0 or -errno, with *out NULL on failure. */
static int open_part(struct runtime_bpf *rb, struct runtime_bpf_part *p, struct profile_bpf **out)
{
	struct profile_bpf *skel = profile_bpf__open();
	struct bpf_program *prog;
	struct bpf_map *map;
	bool found = false;
	int r;

	*out = NULL;
	if (!skel)
		return -errno;
	bpf_object__for_each_program(prog, skel->obj) {
		bool mine = !strcmp(bpf_program__name(prog), p->program);

		bpf_program__set_autoload(prog, mine);
		found |= mine;
	}
	if (!found) {
		profile_bpf__destroy(skel);
		return -ENOENT;
	}
	bpf_object__for_each_map(map, skel->obj) {
		const struct bpf_map *shared = bpf_object__find_map_by_name(rb->main->obj, bpf_map__name(map));

		r = shared ? bpf_map__reuse_fd(map, bpf_map__fd(shared)) : -ENOENT;
		if (r) {
			profile_bpf__destroy(skel);
			return r;
		}
	}
	*out = skel;
	return 0;
}

/* Put prog in p's prog array. 0 or -errno. */
static int install_part(struct runtime_bpf *rb, struct runtime_bpf_part *p, const struct bpf_program *prog)
{
	int fd = prog ? bpf_program__fd(prog) : -1;
	__u32 key = 0;

	if (fd < 0)
		return -ENOENT;
	if (bpf_map__update_elem(bpf_object__find_map_by_name(rb->main->obj, p->slot), &key, sizeof(key), &fd,
				 sizeof(fd), BPF_ANY))
		return -errno;
	return 0;
}

/* p did not load (r: why): said once, counted, not tried again. */
static int part_failed(struct runtime_bpf_part *p, int r)
{
	p->stats.failures++;
	p->stats.state = RUNTIME_BPF_FAILED;
	log_warn("Failed to load the %s BPF part (%s): %s; its processes get native frames only "
		 "(otelprofd -v shows the verifier's log)", p->name, p->program, strerror(-r));
	return r;
}

int runtime_bpf_adopt(struct runtime_bpf *rb, enum runtime_bpf_id id, const char *program)
{
	struct runtime_bpf_part *p = &rb->parts[id];
	const struct bpf_program *prog = bpf_object__find_program_by_name(rb->main->obj, program);
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	int r;

	p->program = program;
	r = install_part(rb, p, prog);
	if (r)
		return part_failed(p, r);
	memset(&info, 0, sizeof(info));
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		p->stats.verified_insns = info.verified_insns;
	p->stats.state = RUNTIME_BPF_LOADED;
	return 0;
}

/* Load part p and put it in its prog array. 0 or -errno (logged). */
static int load_part(struct runtime_bpf *rb, struct runtime_bpf_part *p)
{
	uint64_t start = clock_ns(CLOCK_MONOTONIC), cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	struct profile_bpf *skel;
	int r;

	r = open_part(rb, p, &skel);
	if (!r)
		r = profile_bpf__load(skel);
	if (!r)
		r = install_part(rb, p, bpf_object__find_program_by_name(skel->obj, p->program));
	p->stats.load_ns = clock_ns(CLOCK_MONOTONIC) - start;
	if (r) {
		profile_bpf__destroy(skel);
		return part_failed(p, r);
	}
	p->skel = skel;
	p->stats.verified_insns = bpf_verified_insns(skel->obj);
	p->stats.state = RUNTIME_BPF_LOADED;
	log_debug("BPF part %s (%s) loaded in %.1f ms (%.1f ms of CPU), %llu instructions "
		  "verified", p->name, p->program, p->stats.load_ns / 1e6, (clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu) / 1e6,
		  (unsigned long long)p->stats.verified_insns);
	return 0;
}

/* The first part asked for and still waiting, or -1. Under rb->lock. */
static int next_request(const struct runtime_bpf *rb)
{
	for (int i = 0; i < RUNTIME_BPF_PARTS; i++)
		if ((rb->requested & (1u << i)) && rb->parts[i].stats.state == RUNTIME_BPF_WAITING)
			return i;
	return -1;
}

static void *loader_main(void *arg)
{
	struct runtime_bpf *rb = arg;

	prctl(PR_SET_NAME, "bpf-loader", 0, 0, 0);
	/* It inherited its creator's capabilities: it keeps the loading ones only. */
	if (privileges_keep_only(rb->keep_after | privileges_load_mask()))
		log_warn("Failed to drop the BPF loader thread's other capabilities");
	pthread_mutex_lock(&rb->lock);
	while (!rb->stop && runtime_bpf_waiting(rb)) {
		int id = next_request(rb);
		struct runtime_bpf_part part;

		if (id < 0) {
			pthread_cond_wait(&rb->cond, &rb->lock);
			continue;
		}
		/* Loaded on a copy, the lock released: the event loop goes on reading the ring buffer
		 * meanwhile (a load takes 10-30 ms of CPU, seconds of wall time on a saturated host). */
		part = rb->parts[id];
		pthread_mutex_unlock(&rb->lock);
		load_part(rb, &part);
		pthread_mutex_lock(&rb->lock);
		rb->parts[id] = part;
		rb->finished |= 1u << id;
	}
	/* Nothing left to load: this thread needs no more than the others. */
	if (privileges_keep_only(rb->keep_after))
		log_warn("Failed to drop the BPF loader thread's capabilities");
	pthread_mutex_unlock(&rb->lock);
	return NULL;
}

int runtime_bpf_start_loader(struct runtime_bpf *rb, uint64_t keep_after)
{
	sigset_t all, old;
	int r;

	if (!runtime_bpf_waiting(rb))
		return 0;
	rb->keep_after = keep_after;
	pthread_mutex_init(&rb->lock, NULL);
	pthread_cond_init(&rb->cond, NULL);
	/* The daemon's signals go to its main thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&rb->thread, NULL, loader_main, rb);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		pthread_cond_destroy(&rb->cond);
		pthread_mutex_destroy(&rb->lock);
		return r;
	}
	rb->thread_started = true;
	return 0;
}

static int state_result(enum runtime_bpf_state state)
{
	switch (state) {
	case RUNTIME_BPF_LOADED:
		return 0;
	case RUNTIME_BPF_OFF:
		return -ENOENT;
	case RUNTIME_BPF_FAILED:
		return -ENOEXEC;
	case RUNTIME_BPF_WAITING:
		break;
	}
	return -EINPROGRESS;
}

int runtime_bpf_request(struct runtime_bpf *rb, enum runtime_bpf_id id)
{
	int r;

	if (!rb->thread_started) {
		r = state_result(rb->parts[id].stats.state);
		return r == -EINPROGRESS ? load_part(rb, &rb->parts[id]) : r;
	}
	pthread_mutex_lock(&rb->lock);
	r = state_result(rb->parts[id].stats.state);
	if (r == -EINPROGRESS && !(rb->requested & (1u << id))) {
		rb->requested |= 1u << id;
		pthread_cond_broadcast(&rb->cond);
	}
	pthread_mutex_unlock(&rb->lock);
	return r;
}

unsigned runtime_bpf_take_finished(struct runtime_bpf *rb)
{
	unsigned finished;

	if (!rb->thread_started)
		return 0;
	pthread_mutex_lock(&rb->lock);
	finished = rb->finished;
	rb->finished = 0;
	pthread_mutex_unlock(&rb->lock);
	return finished;
}

struct runtime_bpf_stats runtime_bpf_stats(struct runtime_bpf *rb, enum runtime_bpf_id id)
{
	struct runtime_bpf_stats stats;

	if (!rb->thread_started)
		return rb->parts[id].stats;
	pthread_mutex_lock(&rb->lock);
	stats = rb->parts[id].stats;
	pthread_mutex_unlock(&rb->lock);
	return stats;
}

void runtime_bpf_close(struct runtime_bpf *rb)
{
	if (rb->thread_started) {
		pthread_mutex_lock(&rb->lock);
		rb->stop = true;
		pthread_cond_broadcast(&rb->cond);
		pthread_mutex_unlock(&rb->lock);
		pthread_join(rb->thread, NULL);
		pthread_cond_destroy(&rb->cond);
		pthread_mutex_destroy(&rb->lock);
		rb->thread_started = false;
	}
	for (int i = 0; i < RUNTIME_BPF_PARTS; i++) {
		profile_bpf__destroy(rb->parts[i].skel);
		rb->parts[i].skel = NULL;
	}
}
