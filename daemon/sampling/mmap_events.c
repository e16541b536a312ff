// SPDX-License-Identifier: Apache-2.0
#include "sampling/mmap_events.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

/* Most CPUs read (as the sampler's MAX_CPUS). */
#define MMAP_EVENTS_MAX_CPUS 1024
/* The longest record copied out of a ring (an MMAP2 with a PATH_MAX path and its sample id). */
#define RECORD_MAX 4352

struct ring {
	int fd;
	void *base;             /* the control page, then the data pages */
	uint64_t head, tail;    /* of this read */
	uint64_t next_time;     /* time of the record at tail (UINT64_MAX: none) */
};

struct mmap_events {
	struct ring *rings;
	unsigned nrings;
	size_t page, data_bytes;
	int epfd;
	struct mmap_store *store;
	const pid_t *pids;
	size_t npids;
	bool follow_children;
	bool test_lost;
	struct mmap_events_counters c;
	uint64_t expired_ns;     /* the store's last expiry */
	uint64_t read_ns;        /* the last read's start */
	unsigned char record[RECORD_MAX];
};

/* sample_id_all's tail with sample_type TID | TIME. */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
};

static int open_cpu(int cpu, size_t data_bytes)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(attr), .config = PERF_COUNT_SW_DUMMY,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
		.mmap = 1, .mmap2 = 1, .comm = 1, .comm_exec = 1, .task = 1, .sample_id_all = 1,
		.use_clockid = 1, .clockid = CLOCK_MONOTONIC,
		.watermark = 1, .wakeup_watermark = (uint32_t)(data_bytes / 2),
	};
	int fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Each ring's data bytes: MMAP_EVENTS_RING_PAGES pages, halved until all rings fit the bound. */
static size_t ring_bytes(size_t page, size_t ncpu)
{
	size_t pages = MMAP_EVENTS_RING_PAGES;

	while (pages > MMAP_EVENTS_RING_MIN_PAGES && pages * page * ncpu > MMAP_EVENTS_RINGS_BYTES)
		pages /= 2;
	return pages * page;
}

void mmap_events_free(struct mmap_events *ev)
{
	if (!ev)
		return;
	for (unsigned i = 0; i < ev->nrings; i++) {
		munmap(ev->rings[i].base, ev->page + ev->data_bytes);
		close(ev->rings[i].fd);
	}
	free(ev->rings);
	if (ev->epfd >= 0)
		close(ev->epfd);
	mmap_store_free(ev->store);
	free(ev);
}

struct mmap_events *mmap_events_open(const struct mmap_events_config *cfg, int *err)
{
	struct mmap_events *ev = calloc(1, sizeof(*ev));
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int first_err = -ENODEV;

	if (!ev) {
		*err = -ENOMEM;
		return NULL;
	}
	ev->epfd = -1;
	ev->page = (size_t)sysconf(_SC_PAGESIZE);
	ev->pids = cfg->pids;
	ev->npids = cfg->npids;
	ev->follow_children = cfg->follow_children;
	ev->test_lost = cfg->test_lost;
	if (ncpu < 1 || ncpu > MMAP_EVENTS_MAX_CPUS)
		ncpu = ncpu < 1 ? 1 : MMAP_EVENTS_MAX_CPUS;
	ev->data_bytes = ring_bytes(ev->page, (size_t)ncpu);
	ev->rings = calloc((size_t)ncpu, sizeof(*ev->rings));
	ev->store = mmap_store_new();
	ev->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!ev->rings || !ev->store || ev->epfd < 0) {
		*err = ev->epfd < 0 && ev->rings && ev->store ? -errno : -ENOMEM;
		mmap_events_free(ev);
		return NULL;
	}
	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd = open_cpu(cpu, ev->data_bytes);
		void *base;

		if (fd < 0) {
			if (fd != -ENODEV && fd != -EINVAL) /* offline CPUs: -ENODEV */
				first_err = fd;
			continue;
		}
		base = mmap(NULL, ev->page + ev->data_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (base == MAP_FAILED) {
			first_err = -errno;
			close(fd);
			continue;
		}
		epoll_ctl(ev->epfd, EPOLL_CTL_ADD, fd, &(struct epoll_event){ .events = EPOLLIN, .data.fd = fd });
		ev->rings[ev->nrings++] = (struct ring){ .fd = fd, .base = base };
	}
	if (!ev->nrings) {
		*err = first_err;
		mmap_events_free(ev);
		return NULL;
	}
	ev->c.cpus = ev->nrings;
	return ev;
}

int mmap_events_fd(const struct mmap_events *ev)
{
	return ev->epfd;
}

struct mmap_store *mmap_events_store(struct mmap_events *ev)
{
	return ev->store;
}

void mmap_events_counters(const struct mmap_events *ev, struct mmap_events_counters *out)
{
	*out = ev->c;
}

static const unsigned char *ring_data(const struct mmap_events *ev, const struct ring *r)
{
	return (const unsigned char *)r->base + ev->page;
}

/* n bytes at ring offset off, copied out (a record may wrap around the ring's end). */
static void ring_copy(const struct mmap_events *ev, const struct ring *r, uint64_t off, void *dst, size_t n)
{
	size_t at = (size_t)(off & (ev->data_bytes - 1)), first = ev->data_bytes - at;

	if (first >= n) {
		memcpy(dst, ring_data(ev, r) + at, n);
	} else {
		memcpy(dst, ring_data(ev, r) + at, first);
		memcpy((unsigned char *)dst + first, ring_data(ev, r), n - first);
	}
}

/* The time of the record at r's tail, or UINT64_MAX when the ring is read to its head. */
static void ring_peek(const struct mmap_events *ev, struct ring *r)
{
	struct perf_event_header hdr;
	struct sample_id id;

	r->next_time = UINT64_MAX;
	if (r->head - r->tail < sizeof(hdr))
		return;
	ring_copy(ev, r, r->tail, &hdr, sizeof(hdr));
	if (hdr.size < sizeof(hdr) + sizeof(id) || hdr.size > r->head - r->tail) {
		r->next_time = 0; /* malformed: taken next, and skipped */
		return;
	}
	ring_copy(ev, r, r->tail + hdr.size - sizeof(id), &id, sizeof(id));
	r->next_time = id.time;
}

static bool is_target(const struct mmap_events *ev, uint32_t pid)
{
	for (size_t i = 0; i < ev->npids; i++)
		if ((uint32_t)ev->pids[i] == pid)
			return true;
	return false;
}

/* --pid: the events of pid are kept (a target, or a descendant already followed). */
static bool followed(struct mmap_events *ev, uint32_t pid)
{
	return !ev->pids || is_target(ev, pid) || (ev->follow_children && mmap_store_has(ev->store, pid));
}

static void handle_mmap2(struct mmap_events *ev, const unsigned char *rec, size_t size, uint64_t time)
{
	/* struct { header; u32 pid, tid; u64 addr, len, pgoff; u32 maj, min; u64 ino, ino_generation;
	 * u32 prot, flags; char filename[]; sample_id } */
	const size_t fixed = sizeof(struct perf_event_header) + 8 + 3 * 8 + 2 * 4 + 2 * 8 + 2 * 4;
	struct mmap_store_map m;
	uint32_t pid, prot;
	size_t name_max;

	if (size < fixed + sizeof(struct sample_id) + 1) {
		ev->c.malformed++;
		return;
	}
	memcpy(&pid, rec + 8, 4);
	memcpy(&m.start, rec + 16, 8);
	memcpy(&m.len, rec + 24, 8);
	memcpy(&m.pgoff, rec + 32, 8);
	memcpy(&m.maj, rec + 40, 4);
	memcpy(&m.min, rec + 44, 4);
	memcpy(&m.ino, rec + 48, 8);
	memcpy(&prot, rec + 64, 4);
	name_max = size - fixed - sizeof(struct sample_id);
	if (!memchr(rec + fixed, 0, name_max)) {
		ev->c.malformed++;
		return;
	}
	m.path = (const char *)rec + fixed;
	/* Executable file mappings (mmap_data is off), and the vDSO (the symbolizer serves it from its
	 * own image). */
	if (!(prot & PROT_EXEC) || !followed(ev, pid) ||
	    (strcmp(m.path, "[vdso]") && (m.path[0] != '/' || !m.ino)))
		return;
	mmap_store_map(ev->store, pid, &m, time);
}

static void handle(struct mmap_events *ev, const unsigned char *rec, size_t size)
{
	const struct perf_event_header *hdr = (const void *)rec;
	struct sample_id id;
	uint32_t pid, ppid, tid;

	memcpy(&id, rec + size - sizeof(id), sizeof(id));
	switch (hdr->type) {
	case PERF_RECORD_MMAP2:
		handle_mmap2(ev, rec, size, id.time);
		break;
	case PERF_RECORD_COMM:
		/* { u32 pid, tid; char comm[]; } */
		memcpy(&pid, rec + 8, 4);
		if ((hdr->misc & PERF_RECORD_MISC_COMM_EXEC) && followed(ev, pid))
			mmap_store_exec(ev->store, pid, id.time);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		/* { u32 pid, ppid, tid, ptid; u64 time; } */
		if (size < 8 + 24 + sizeof(id)) {
			ev->c.malformed++;
			break;
		}
		memcpy(&pid, rec + 8, 4);
		memcpy(&ppid, rec + 12, 4);
		memcpy(&tid, rec + 16, 4);
		if (pid != tid)
			break; /* a thread's */
		if (hdr->type == PERF_RECORD_EXIT) {
			mmap_store_exit(ev->store, pid, id.time);
		} else if (pid != ppid) {
			if (!ev->pids || is_target(ev, pid) || (ev->follow_children && followed(ev, ppid)))
				mmap_store_fork(ev->store, pid, ppid, id.time);
			else
				ev->c.filtered++;
		}
		break;
	case PERF_RECORD_LOST: {
		uint64_t lost;

		/* { u64 id, lost; } */
		memcpy(&lost, rec + 16, 8);
		ev->c.lost += lost;
		mmap_store_lost(ev->store, id.time);
		break;
	}
	default:
		break;
	}
}

uint64_t mmap_events_read_at(const struct mmap_events *ev)
{
	return ev->read_ns;
}

void mmap_events_read(struct mmap_events *ev, uint64_t now)
{
	ev->read_ns = now;
	for (unsigned i = 0; i < ev->nrings; i++) {
		struct ring *r = &ev->rings[i];
		struct perf_event_mmap_page *pg = r->base;

		r->head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
		r->tail = pg->data_tail;
		ring_peek(ev, r);
	}
	/* Records in time order across the CPUs: each ring is in order, the oldest head goes first. */
	for (;;) {
		struct ring *r = NULL;
		struct perf_event_header hdr;

		for (unsigned i = 0; i < ev->nrings; i++)
			if (ev->rings[i].next_time != UINT64_MAX && (!r || ev->rings[i].next_time < r->next_time))
				r = &ev->rings[i];
		if (!r)
			break;
		ring_copy(ev, r, r->tail, &hdr, sizeof(hdr));
		if (hdr.size < sizeof(hdr) + sizeof(struct sample_id) || hdr.size > r->head - r->tail ||
		    hdr.size > RECORD_MAX) {
			ev->c.malformed++;
			r->tail = hdr.size >= sizeof(hdr) && hdr.size <= r->head - r->tail ? r->tail + hdr.size : r->head;
		} else {
			ring_copy(ev, r, r->tail, ev->record, hdr.size);
			ev->c.records++;
			handle(ev, ev->record, hdr.size);
			r->tail += hdr.size;
		}
		ring_peek(ev, r);
	}
	for (unsigned i = 0; i < ev->nrings; i++) {
		struct perf_event_mmap_page *pg = ev->rings[i].base;

		__atomic_store_n(&pg->data_tail, ev->rings[i].tail, __ATOMIC_RELEASE);
	}
	if (ev->test_lost)
		mmap_store_lost(ev->store, now);
	if (now - ev->expired_ns >= 1000000000ULL) {
		ev->expired_ns = now;
		mmap_store_expire(ev->store, now);
	}
}

int mmap_events_history(void *ctx, pid_t pid, uint64_t start_ns, uint64_t time_ns, struct symbolizer_mapping *out,
			size_t max, size_t *n, pid_t *root_pid, enum symbolizer_history_whole *whole)
{
	enum mmap_store_whole w = MMAP_STORE_GAP;
	struct mmap_events *ev = ctx;
	struct mmap_store_map maps[SYMBOLIZER_HISTORY_MAX_MAPS];
	uint64_t mono = clock_ns(CLOCK_MONOTONIC), boot = clock_ns(CLOCK_BOOTTIME), suspended, start_mono;
	uint32_t parent = 0;
	int r;

	/* The start time is CLOCK_BOOTTIME, the events' CLOCK_MONOTONIC: apart by the time suspended
	 * (read in this order, never less than 0 but for the clocks' own jitter). */
	suspended = boot > mono ? boot - mono : 0;
	if (pid <= 0 || start_ns <= suspended)
		return -EINVAL;
	start_mono = start_ns - suspended;
	if (max > SYMBOLIZER_HISTORY_MAX_MAPS)
		max = SYMBOLIZER_HISTORY_MAX_MAPS;
	/* A live process: what it mapped since the turn's read is in the rings (a ring with nothing new
	 * costs two loads). */
	if (whole && mono > ev->read_ns)
		mmap_events_read(ev, mono);
	r = mmap_store_lookup(ev->store, (uint32_t)pid, start_mono, time_ns, maps, max, n, &parent, whole ? &w : NULL);
	if (r == -ENOENT && time_ns >= ev->read_ns) {
		/* Forked after the turn's read: its events may be in the rings now. */
		mmap_events_read(ev, mono);
		r = mmap_store_lookup(ev->store, (uint32_t)pid, start_mono, time_ns, maps, max, n, &parent,
				      whole ? &w : NULL);
	}
	if (whole)
		*whole = w == MMAP_STORE_WHOLE ? SYMBOLIZER_HISTORY_WHOLE :
			 w == MMAP_STORE_INHERITED ? SYMBOLIZER_HISTORY_INHERITED : SYMBOLIZER_HISTORY_GAP;
	if (r)
		return r;
	for (size_t i = 0; i < *n; i++)
		out[i] = (struct symbolizer_mapping){
			.start = maps[i].start, .end = maps[i].start + maps[i].len, .offset = maps[i].pgoff,
			.dev = makedev(maps[i].maj, maps[i].min), .inode = maps[i].ino, .path = maps[i].path,
		};
	*root_pid = (pid_t)parent;
	return 0;
}
