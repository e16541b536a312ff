// SPDX-License-Identifier: Apache-2.0
/* Module opens in a thread of their own (module_opener.h). */
#include "module_opener.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct module_opener {
	pthread_mutex_t lock;
	pthread_cond_t done_cond;        /* signalled when the job is done */
	pthread_t thread;
	bool busy;                       /* a job is started and not taken */
	bool done;                       /* the job finished: elf and err are set */
	bool abandoned;                  /* its caller is gone: the thread frees everything when done */
	int fd;                          /* the job's file, and its options (path copied) */
	struct elf_module_options options;
	char *path;
	struct elf_module *elf;          /* the job's result */
	uint64_t delay_ms;               /* each job starts this much later (tests) */
	int err;                         /* errno when elf is NULL */
};

struct module_opener *module_opener_new(uint64_t delay_ms)
{
	struct module_opener *o = calloc(1, sizeof(*o));
	pthread_condattr_t attr;

	if (!o)
		return NULL;
	o->delay_ms = delay_ms;
	pthread_mutex_init(&o->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&o->done_cond, &attr);
	pthread_condattr_destroy(&attr);
	return o;
}

static void destroy(struct module_opener *o)
{
	pthread_cond_destroy(&o->done_cond);
	pthread_mutex_destroy(&o->lock);
	free(o);
}

static void *run_job(void *arg)
{
	struct module_opener *o = arg;
	struct elf_module *elf;
	int err;
	bool abandoned;

	if (o->delay_ms)
		nanosleep(&(struct timespec){ .tv_sec = (time_t)(o->delay_ms / 1000),
					      .tv_nsec = (long)(o->delay_ms % 1000) * 1000000L }, NULL);
	elf = elf_module_open(o->fd, &o->options);
	err = elf ? 0 : errno;

	if (o->options.root_fd >= 0)
		close(o->options.root_fd);
	pthread_mutex_lock(&o->lock);
	o->elf = elf;
	o->err = err;
	o->done = true;
	abandoned = o->abandoned;
	pthread_cond_broadcast(&o->done_cond);
	pthread_mutex_unlock(&o->lock);
	if (abandoned) {
		/* Nobody takes it: the thread is detached, and the last to touch the opener. */
		elf_module_free(elf);
		free(o->path);
		destroy(o);
	}
	return NULL;
}

bool module_opener_busy(const struct module_opener *o)
{
	return o->busy;
}

int module_opener_start(struct module_opener *o, int fd, const struct elf_module_options *options)
{
	char *path = NULL;
	int r;

	if (o->busy)
		return -EBUSY;
	if (options->path && !(path = strdup(options->path)))
		return -ENOMEM;
	o->fd = fd;
	o->options = *options;
	o->options.path = path;
	o->path = path;
	o->done = false;
	o->elf = NULL;
	r = pthread_create(&o->thread, NULL, run_job, o);
	if (r) {
		free(path);
		o->path = NULL;
		return -r;
	}
	o->busy = true;
	return 0;
}

bool module_opener_wait(struct module_opener *o, uint64_t deadline_ns)
{
	struct timespec until = { .tv_sec = (time_t)(deadline_ns / 1000000000ULL),
				  .tv_nsec = (long)(deadline_ns % 1000000000ULL) };
	bool done;

	if (!o->busy)
		return true;
	pthread_mutex_lock(&o->lock);
	while (!o->done) {
		int r = deadline_ns ? pthread_cond_timedwait(&o->done_cond, &o->lock, &until) :
				      pthread_cond_wait(&o->done_cond, &o->lock);

		if (r == ETIMEDOUT)
			break;
	}
	done = o->done;
	pthread_mutex_unlock(&o->lock);
	return done;
}

struct elf_module *module_opener_take(struct module_opener *o, int *err)
{
	struct elf_module *elf = o->elf;

	*err = o->err;
	if (!o->busy)
		return NULL;
	pthread_join(o->thread, NULL);
	free(o->path);
	o->path = NULL;
	o->elf = NULL;
	o->busy = false;
	return elf;
}

void module_opener_free(struct module_opener *o)
{
	int err;

	if (!o)
		return;
	if (o->busy) {
		module_opener_wait(o, 0);
		elf_module_free(module_opener_take(o, &err));
	}
	destroy(o);
}

bool module_opener_abandon(struct module_opener *o)
{
	pthread_t thread;
	bool running;

	if (!o)
		return false;
	if (!o->busy) {
		destroy(o);
		return false;
	}
	thread = o->thread; /* o may be gone once unlocked */
	pthread_mutex_lock(&o->lock);
	running = !o->done;
	o->abandoned = running;
	pthread_mutex_unlock(&o->lock);
	if (!running) {
		module_opener_free(o); /* done: joined at once */
		return false;
	}
	pthread_detach(thread);
	return true;
}
