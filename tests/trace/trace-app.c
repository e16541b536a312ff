// SPDX-License-Identifier: Apache-2.0
/*
 * A test application that publishes both OpenTelemetry contexts exactly as the OTEPs say:
 * its process context (OTEP 4719: a memfd mapping OTEL_CTX, protobuf ProcessContext payload) a
 * second after start, and a thread context (OTEP 4947) per thread in otel_thread_ctx_v1.
 *
 *   trace-app SECONDS [LIBRARY]   (LIBRARY: the library to dlopen, in the dlopen build)
 *
 * worker-0 and worker-1 attach by pointer (and detach with NULL), worker-2 keeps one record and
 * flips valid (detaching with valid = 0); each runs span_fn_0..2 under its own span
 * (trace id 0x10+i repeated, last byte 01; span id a0+i b0+j 01 02 03 04 05 06) with the attributes
 * http.route=/span/J (written twice: the last wins) and worker.kind=wI, then detached_fn. Before the
 * context is published (and 1.5 s after) they run warmup_fn. A hostile thread cycles through a
 * record claiming 60000 attribute bytes, one with keys outside the map, and a pointer into
 * unmapped memory.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

struct record {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t valid;
	uint8_t trace_flags;
	uint16_t attrs_size;
	uint8_t attrs[612];
} __attribute__((packed, aligned(8)));

static void (*ctx_set)(void *record);
static atomic_int started; /* the context is published, and 1.5 s passed */
static atomic_int stop;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Burn CPU for about ms milliseconds (a loop the compiler keeps). */
__attribute__((noinline)) static void burn(double ms)
{
	volatile uint64_t x = 0;
	double end = now_s() + ms / 1e3;

	while (now_s() < end)
		for (int i = 0; i < 1000; i++)
			x += (uint64_t)i * 7;
}

__attribute__((noinline)) void warmup_fn(void) { burn(20); }
__attribute__((noinline)) void span_fn_0(void) { burn(30); }
__attribute__((noinline)) void span_fn_1(void) { burn(30); }
__attribute__((noinline)) void span_fn_2(void) { burn(30); }
__attribute__((noinline)) void detached_fn(void) { burn(30); }
__attribute__((noinline)) void hostile_oversized_fn(void) { burn(30); }
__attribute__((noinline)) void hostile_badkey_fn(void) { burn(30); }
__attribute__((noinline)) void hostile_unmapped_fn(void) { burn(30); }

static void (*const span_fns[3])(void) = { span_fn_0, span_fn_1, span_fn_2 };

static size_t put_attr(uint8_t *at, uint8_t key, const char *value)
{
	size_t n = strlen(value);

	at[0] = key;
	at[1] = (uint8_t)n;
	memcpy(at + 2, value, n);
	return 2 + n;
}

static void fill(struct record *r, int worker, int span)
{
	char kind[8];
	size_t n = 0;
	char route[16];

	for (int k = 0; k < 15; k++)
		r->trace_id[k] = (uint8_t)(0x10 + worker);
	r->trace_id[15] = 1;
	r->span_id[0] = (uint8_t)(0xa0 + worker);
	r->span_id[1] = (uint8_t)(0xb0 + span);
	for (int k = 2; k < 8; k++)
		r->span_id[k] = (uint8_t)(k - 1);
	r->trace_flags = 1;
	snprintf(kind, sizeof(kind), "w%d", worker);
	snprintf(route, sizeof(route), "/span/%d", span);
	n += put_attr(r->attrs + n, 0, "stale");
	n += put_attr(r->attrs + n, 1, kind);
	n += put_attr(r->attrs + n, 0, route);
	r->attrs_size = (uint16_t)n;
}

static void *worker(void *arg)
{
	int i = (int)(intptr_t)arg;
	static __thread struct record records[3], fixed;
	char name[16];

	snprintf(name, sizeof(name), "worker-%d", i);
	pthread_setname_np(pthread_self(), name);
	while (!atomic_load(&started) && !atomic_load(&stop))
		warmup_fn();
	if (i == 2)
		ctx_set(&fixed); /* one record for good: valid says when it holds */
	while (!atomic_load(&stop)) {
		for (int j = 0; j < 3; j++) {
			if (i == 2) {
				fixed.valid = 0;
				atomic_signal_fence(memory_order_seq_cst);
				fill(&fixed, i, j);
				atomic_signal_fence(memory_order_seq_cst);
				fixed.valid = 1;
			} else {
				fill(&records[j], i, j);
				records[j].valid = 1;
				ctx_set(&records[j]);
			}
			span_fns[j]();
			if (i == 2) {
				atomic_signal_fence(memory_order_seq_cst);
				fixed.valid = 0;
				atomic_signal_fence(memory_order_seq_cst);
			} else {
				ctx_set(NULL);
			}
			detached_fn();
		}
	}
	return NULL;
}

static void *hostile(void *arg)
{
	static __thread struct record oversized, badkey;
	/* Below vm.mmap_min_addr: never mapped (an unmapped page of our own could be reused by a stack). */
	void *unmapped = (void *)0x1000;

	(void)arg;
	pthread_setname_np(pthread_self(), "hostile");
	fill(&oversized, 7, 0);
	oversized.attrs_size = 60000; /* far beyond the bytes the record has */
	oversized.valid = 1;
	fill(&badkey, 8, 0);
	badkey.attrs_size = (uint16_t)(put_attr(badkey.attrs, 200, "nokey") + put_attr(badkey.attrs + 7, 0, "/bad"));
	badkey.valid = 1;
	while (!atomic_load(&started) && !atomic_load(&stop))
		warmup_fn();
	while (!atomic_load(&stop)) {
		ctx_set(&oversized);
		hostile_oversized_fn();
		ctx_set(&badkey);
		hostile_badkey_fn();
		ctx_set(unmapped);
		hostile_unmapped_fn();
		ctx_set(NULL);
	}
	return NULL;
}

/* Protobuf, by hand: a length-delimited field. */
static size_t pb_bytes(uint8_t *at, unsigned field, const void *data, size_t len)
{
	size_t n = 0;

	at[n++] = (uint8_t)(field << 3 | 2);
	for (size_t v = len;; v >>= 7) {
		at[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		if (v <= 0x7f)
			break;
	}
	memcpy(at + n, data, len);
	return n + len;
}

/* KeyValue { key, value: AnyValue { string_value } } */
static size_t pb_kv_string(uint8_t *at, unsigned field, const char *key, const char *value)
{
	uint8_t kv[512], any[256];
	size_t n = pb_bytes(kv, 1, key, strlen(key));

	n += pb_bytes(kv + n, 2, any, pb_bytes(any, 1, value, strlen(value)));
	return pb_bytes(at, field, kv, n);
}

static size_t payload(uint8_t *out)
{
	uint8_t resource[1024], array[256], any[256], kv[512];
	size_t r = 0, a = 0, n = 0, k;
	const char *keys[] = { "http.route", "worker.kind" };

	r += pb_kv_string(resource + r, 1, "service.name", "trace-app-svc");
	r += pb_kv_string(resource + r, 1, "service.version", "1.2.3");
	r += pb_kv_string(resource + r, 1, "deployment.environment.name", "test");
	n += pb_bytes(out + n, 1, resource, r);
	n += pb_kv_string(out + n, 2, "threadlocal.schema_version", "tlsdesc_v1_dev");
	for (int i = 0; i < 2; i++) /* ArrayValue { repeated AnyValue values = 1 } */
		a += pb_bytes(array + a, 1, any, pb_bytes(any, 1, keys[i], strlen(keys[i])));
	k = pb_bytes(kv, 1, "threadlocal.attribute_key_map", strlen("threadlocal.attribute_key_map"));
	k += pb_bytes(kv + k, 2, any, pb_bytes(any, 5, array, a));
	n += pb_bytes(out + n, 2, kv, k);
	return n;
}

/* OTEP 4719's publication protocol: memfd, header, payload after it, signature last, then the name. */
static int publish(void)
{
	struct header {
		char signature[8];
		uint32_t version, payload_size;
		uint64_t published_at_ns, payload;
	} *h;
	struct timespec ts;
	int fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
	uint8_t *map;

	if (fd < 0 || ftruncate(fd, 4096))
		return -1;
	map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	madvise(map, 4096, MADV_DONTFORK);
	h = (struct header *)map;
	h->payload_size = (uint32_t)payload(map + sizeof(*h));
	h->payload = (uint64_t)(uintptr_t)(map + sizeof(*h));
	h->version = 2;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	h->published_at_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	atomic_thread_fence(memory_order_seq_cst);
	memcpy(h->signature, "OTEL_CTX", 8);
	prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, map, 4096, "OTEL_CTX"); /* fails without CONFIG_ANON_VMA_NAME */
	return 0;
}

extern void otel_ctx_set(void *record);

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	pthread_t threads[4];

#ifdef TLS_DLOPEN
	void *lib = dlopen(argc > 2 ? argv[2] : "libtracectx-dl.so", RTLD_NOW);

	if (!lib || !(ctx_set = (void (*)(void *))dlsym(lib, "otel_ctx_set"))) {
		fprintf(stderr, "trace-app: %s\n", dlerror());
		return 1;
	}
#else
	ctx_set = otel_ctx_set;
#endif
	for (int i = 0; i < 3; i++)
		pthread_create(&threads[i], NULL, worker, (void *)(intptr_t)i);
	pthread_create(&threads[3], NULL, hostile, NULL);
	/* TRACE_APP_PUBLISH_AFTER (seconds, default 1): bench/trace measures how soon a late context is
	 * found, from the line printed here. */
	usleep((useconds_t)((getenv("TRACE_APP_PUBLISH_AFTER") ? atof(getenv("TRACE_APP_PUBLISH_AFTER")) : 1) * 1e6));
	if (publish())
		perror("trace-app: publish");
	printf("trace-app: published\n");
	fflush(stdout);
	/* otelprofd picks a late context up within a second (bench/trace): it looks again when the
	 * mappings changed, at most every 0.5 s, at samples it reads up to SAMPLER_DRAIN_MS (200 ms)
	 * after they were taken. The spans start 1.5 s later, so that a loaded machine does not fail
	 * the checks of what is linked. */
	usleep(1500000);
	atomic_store(&started, 1);
	usleep((useconds_t)((seconds - 2.5) * 1e6));
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(threads[i], NULL);
	return 0;
}
