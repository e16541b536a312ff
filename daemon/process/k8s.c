// SPDX-License-Identifier: Apache-2.0
/*
 * The Kubernetes pod watcher: one thread, one libcurl handle, LIST then WATCH of this node's pods
 * into the cache of k8s_pods.c. See k8s.h.
 */
#include "process/k8s.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "clock.h"
#include "curl_lib.h"
#include "dl_lib.h"
#include "log.h"

#define MAX_LIST_BYTES (256u << 20) /* a PodList larger than this is refused (a node holds hundreds of pods) */
#define MAX_EVENT_BYTES (16u << 20) /* one watch event (one pod) larger than this ends the watch */
#define MAX_ERROR_BYTES 4096        /* kept of an error answer, for the message */
#define MAX_TOKEN_BYTES 65536
#define CONNECT_TIMEOUT_S 10
#define LIST_TIMEOUT_S 60

struct buf {
	char *data;
	size_t len, cap;
};

struct k8s {
	char *api_url;        /* without a trailing '/' */
	char *token_path, *ca_path;
	char *node_name;
	struct k8s_pods *pods;
	unsigned backoff_min_ms, backoff_max_ms, watch_timeout_s;

	pthread_t thread;
	bool started;
	pthread_mutex_t lock; /* guards stop, for the condition variable */
	pthread_cond_t wake;
	bool stop;            /* also read without the lock (atomically) by the transfer callbacks */

	/* Owned by the thread. */
	CURL *curl;
	char rv[K8S_RESOURCE_VERSION_LEN]; /* last resourceVersion seen, "" before the first list */
	struct buf body;      /* a LIST answer, or the start of an error answer */
	struct buf line;      /* watch stream bytes not yet ending in '\n' */
	size_t scanned;       /* bytes of line already searched for '\n' */
	bool watching;        /* the transfer in flight is a watch */
	bool gone;            /* a 410 arrived in the stream */
	bool stream_error;    /* another ERROR event arrived in the stream */
	bool too_big;         /* an answer or event passed its bound */
	uint64_t stream_events;
	bool failing;         /* the API's last attempt failed (and that was said) */

	struct k8s_counters counters; /* updated with __atomic builtins */
};

static void count(uint64_t *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

static bool stopping(struct k8s *k)
{
	return __atomic_load_n(&k->stop, __ATOMIC_RELAXED);
}

static int buf_append(struct buf *b, const char *data, size_t n, size_t limit)
{
	if (b->len + n > limit)
		return -E2BIG;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *grown;

		while (cap < b->len + n + 1)
			cap *= 2;
		grown = realloc(b->data, cap);
		if (!grown)
			return -ENOMEM;
		b->data = grown;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = 0;
	return 0;
}

static void buf_free(struct buf *b)
{
	free(b->data);
	*b = (struct buf){ 0 };
}

static void answered(struct k8s *k);

/* One line of the watch stream. false ends the transfer (410, an error event). */
static bool on_event(struct k8s *k, const char *line, size_t len)
{
	int code = 0, kind;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (!len)
		return true;
	kind = k8s_pods_apply_event(k->pods, line, len, clock_ns(CLOCK_MONOTONIC), k->rv, sizeof(k->rv), &code);
	if (kind < 0) /* malformed: counted by the cache, skipped */
		return true;
	if (kind == K8S_EVENT_ERROR) {
		if (code == 410)
			k->gone = true;
		else
			k->stream_error = true;
		return false;
	}
	count(&k->counters.events);
	if (k->failing) /* the watch that follows a failed one delivers: the API is back */
		answered(k);
	if (kind == K8S_EVENT_BOOKMARK)
		count(&k->counters.bookmarks);
	k->stream_events++;
	return true;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct k8s *k = ctx;
	size_t n = size * nmemb, start = 0;
	long status = 0;
	char *nl;

	curl_lib.curl_easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		/* Keep the start of an error answer for its message; read and drop the rest. */
		if (k->body.len < MAX_ERROR_BYTES)
			buf_append(&k->body, data, n < MAX_ERROR_BYTES - k->body.len ? n : MAX_ERROR_BYTES - k->body.len,
				   MAX_ERROR_BYTES);
		return n;
	}
	if (!k->watching) {
		int r = buf_append(&k->body, data, n, MAX_LIST_BYTES);

		if (r)
			k->too_big = true;
		return r ? 0 : n;
	}
	if (buf_append(&k->line, data, n, MAX_EVENT_BYTES)) {
		k->too_big = true;
		return 0;
	}
	while ((nl = memchr(k->line.data + k->scanned, '\n', k->line.len - k->scanned))) {
		size_t end = (size_t)(nl - k->line.data);

		if (!on_event(k, k->line.data + start, end - start))
			return 0;
		start = end + 1;
		k->scanned = start;
	}
	memmove(k->line.data, k->line.data + start, k->line.len - start);
	k->line.len -= start;
	k->line.data[k->line.len] = 0;
	k->scanned = k->line.len;
	return n;
}

/* libcurl calls this about once a second even on an idle watch: the way out of a long request. */
static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	return stopping(ctx) ? 1 : 0;
}

static int read_token(const char *path, char *header, size_t size)
{
	static const char prefix[] = "Authorization: Bearer ";
	size_t n = sizeof(prefix) - 1, got;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	memcpy(header, prefix, n);
	got = fread(header + n, 1, size - n - 1, f);
	fclose(f);
	while (got && (header[n + got - 1] == '\n' || header[n + got - 1] == '\r' || header[n + got - 1] == ' '))
		got--;
	header[n + got] = 0;
	if (!got || strchr(header + n, '\n'))
		return -EBADMSG;
	return 0;
}

/* The message of an error answer: the Status's message, else its first line. */
static void error_message(const struct buf *b, char *out, size_t size)
{
	json_object *o = b->len ? json_tokener_parse(b->data) : NULL, *msg;

	if (o && json_object_object_get_ex(o, "message", &msg) && json_object_is_type(msg, json_type_string))
		snprintf(out, size, "%s", json_object_get_string(msg));
	else
		snprintf(out, size, "%.*s", (int)(b->len ? strcspn(b->data, "\r\n") : 0), b->len ? b->data : "");
	json_object_put(o);
}

/*
 * One request. 0 (200 and, for a list, the body in k->body), -ESTALE (410 Gone), -ECANCELED
 * (stopping), or another -errno with the reason in why.
 */
static int perform(struct k8s *k, const char *url, bool watch, char *why, size_t why_size)
{
	char *token = malloc(MAX_TOKEN_BYTES + 32), errbuf[CURL_ERROR_SIZE] = "", msg[256];
	struct curl_slist *headers = NULL, *h;
	long status = 0;
	CURLcode rc;
	int r;

	if (!token)
		return -ENOMEM;
	r = read_token(k->token_path, token, MAX_TOKEN_BYTES + 32);
	if (r) {
		snprintf(why, why_size, "cannot read the service account token %s: %s", k->token_path,
			 r == -EBADMSG ? "empty or not one line" : strerror(-r));
		free(token);
		return r;
	}
	headers = curl_lib.curl_slist_append(NULL, token);
	h = headers ? curl_lib.curl_slist_append(headers, "Accept: application/json") : NULL;
	explicit_bzero(token, MAX_TOKEN_BYTES + 32);
	free(token);
	if (!h) {
		curl_lib.curl_slist_free_all(headers);
		return -ENOMEM;
	}
	headers = h;

	k->body.len = 0;
	k->line.len = 0;
	k->scanned = 0;
	k->watching = watch;
	k->gone = k->stream_error = k->too_big = false;
	k->stream_events = 0;
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_URL, url);
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_HTTPHEADER, headers);
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_TIMEOUT, (long)(watch ? k->watch_timeout_s + 60 : LIST_TIMEOUT_S));
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_ERRORBUFFER, errbuf);
	rc = curl_lib.curl_easy_perform(k->curl);
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_ERRORBUFFER, NULL);
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_HTTPHEADER, NULL);
	curl_lib.curl_slist_free_all(headers);
	curl_lib.curl_easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &status);

	if (stopping(k))
		return -ECANCELED;
	if (k->gone || status == 410)
		return -ESTALE;
	if (k->stream_error) {
		snprintf(why, why_size, "the watch sent an error event");
		return -EPROTO;
	}
	if (k->too_big) {
		snprintf(why, why_size, "%s larger than %u MiB", watch ? "a watch event" : "the pod list",
			 (watch ? MAX_EVENT_BYTES : MAX_LIST_BYTES) >> 20);
		return -E2BIG;
	}
	if (rc != CURLE_OK) {
		snprintf(why, why_size, "%s", errbuf[0] ? errbuf : curl_lib.curl_easy_strerror(rc));
		return -EIO;
	}
	if (status != 200) {
		error_message(&k->body, msg, sizeof(msg));
		snprintf(why, why_size, "HTTP %ld%s%s", status, msg[0] ? ": " : "", msg);
		return status == 401 || status == 403 ? -EACCES : -EIO;
	}
	return 0;
}

static char *pods_url(struct k8s *k, const char *params)
{
	char *node = curl_lib.curl_easy_escape(k->curl, k->node_name, 0), *url = NULL;

	if (node && asprintf(&url, "%s/api/v1/pods?fieldSelector=spec.nodeName%%3D%s%s", k->api_url, node, params) < 0)
		url = NULL;
	curl_lib.curl_free(node);
	return url;
}

/*
 * LIST the node's pods into the cache. The first list may come from the API server's cache
 * (resourceVersion=0, cheap for the server when every node starts at once); after a 410 the list must
 * be at least as new as what expired, so it is a consistent read.
 */
static int list_pods(struct k8s *k, bool from_cache, char *why, size_t why_size)
{
	char *url = pods_url(k, from_cache ? "&resourceVersion=0" : "");
	int r;

	if (!url)
		return -ENOMEM;
	r = perform(k, url, false, why, why_size);
	free(url);
	if (r)
		return r;
	r = k8s_pods_apply_list(k->pods, k->body.data ? k->body.data : "", k->body.len, clock_ns(CLOCK_MONOTONIC), k->rv,
				sizeof(k->rv));
	if (r == -EBADMSG)
		snprintf(why, why_size, "the answer is not a PodList");
	return r;
}

static int watch_pods(struct k8s *k, char *why, size_t why_size)
{
	char *rv = curl_lib.curl_easy_escape(k->curl, k->rv, 0), params[256], *url;
	int r;

	if (!rv)
		return -ENOMEM;
	snprintf(params, sizeof(params), "&watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%u", rv,
		 k->watch_timeout_s);
	curl_lib.curl_free(rv);
	url = pods_url(k, params);
	if (!url)
		return -ENOMEM;
	count(&k->counters.watches);
	r = perform(k, url, true, why, why_size);
	free(url);
	return r;
}

/* Wait ms milliseconds or until k8s_stop(). */
static void sleep_ms(struct k8s *k, unsigned ms)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&k->lock);
	while (!k->stop && pthread_cond_timedwait(&k->wake, &k->lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&k->lock);
}

static void failed(struct k8s *k, const char *what, const char *why)
{
	if (!k->failing)
		log_warn("Kubernetes API %s: %s failed: %s; profiles go on without k8s.pod.name, k8s.namespace.name "
			 "and k8s.container.name until it answers", k->api_url, what, why);
	else
		log_debug("Kubernetes API %s: %s failed again: %s", k->api_url, what, why);
	k->failing = true;
}

static void answered(struct k8s *k)
{
	struct k8s_pods_counters pc;

	k8s_pods_counters(k->pods, &pc);
	if (k->failing)
		log_info("Kubernetes API %s answers again: %" PRIu64 " %s on node %s", k->api_url, pc.entries,
			 plural(pc.entries, "pod", "pods"), k->node_name);
	else
		log_debug("Kubernetes API %s: %" PRIu64 " pods on node %s", k->api_url, pc.entries, k->node_name);
	k->failing = false;
}

static void *watcher(void *arg)
{
	struct k8s *k = arg;
	unsigned backoff = k->backoff_min_ms, seed = (unsigned)clock_ns(CLOCK_MONOTONIC);
	bool need_list = true, from_cache = true;

	while (!stopping(k)) {
		char why[512] = "";
		uint64_t started;
		int r;

		if (need_list) {
			r = list_pods(k, from_cache, why, sizeof(why));
			if (r == -ECANCELED)
				break;
			if (r) {
				count(&k->counters.list_errors);
				failed(k, "listing pods", why);
				goto backoff;
			}
			count(&k->counters.lists);
			answered(k);
			need_list = false;
			backoff = k->backoff_min_ms;
		}
		started = clock_ns(CLOCK_MONOTONIC);
		r = watch_pods(k, why, sizeof(why));
		if (r == -ECANCELED)
			break;
		if (r == -ESTALE) {
			/* Our resourceVersion is older than the server keeps: start again from a fresh list. */
			count(&k->counters.gone);
			log_debug("Kubernetes API: resourceVersion %s expired (410 Gone), listing again", k->rv);
			need_list = true;
			from_cache = false;
			continue;
		}
		if (r) {
			count(&k->counters.watch_errors);
			failed(k, "watching pods", why);
			goto backoff;
		}
		/* The server ended the watch (timeoutSeconds): resume at once, unless it ends them right away. */
		if (k->failing)
			answered(k);
		if (k->stream_events || clock_ns(CLOCK_MONOTONIC) - started > 1000000000ULL) {
			backoff = k->backoff_min_ms;
			continue;
		}
backoff:
		/* Wait between half the backoff and all of it, so that nodes do not retry in step. */
		sleep_ms(k, backoff / 2 + (unsigned)rand_r(&seed) % (backoff / 2 + 1));
		backoff = backoff > k->backoff_max_ms / 2 ? k->backoff_max_ms : backoff * 2;
	}
	return NULL;
}

bool k8s_configured(const struct k8s_config *config)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *url = getenv("OTELPROFD_K8S_API_URL");

	return (config && config->api_url && *config->api_url) || (url && *url) || (host && *host);
}

/* The API server's URL from the configuration or the environment, or NULL. */
static char *resolve_url(const struct k8s_config *config)
{
	const char *url = config->api_url, *host, *port;
	char *out = NULL;
	size_t n;

	if (!url || !*url)
		url = getenv("OTELPROFD_K8S_API_URL");
	if (url && *url) {
		out = strdup(url);
	} else {
		host = getenv("KUBERNETES_SERVICE_HOST");
		port = getenv("KUBERNETES_SERVICE_PORT");
		if (!host || !*host)
			return NULL;
		if (asprintf(&out, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
			     port && *port ? port : "443") < 0)
			out = NULL;
	}
	for (n = out ? strlen(out) : 0; n && out[n - 1] == '/'; n--)
		out[n - 1] = 0;
	return out;
}

static char *path_join(const char *dir, const char *name)
{
	char *out;

	return asprintf(&out, "%s/%s", dir, name) < 0 ? NULL : out;
}

static void k8s_free(struct k8s *k)
{
	if (!k)
		return;
	if (k->curl)
		curl_lib.curl_easy_cleanup(k->curl);
	k8s_pods_free(k->pods);
	buf_free(&k->body);
	buf_free(&k->line);
	free(k->api_url);
	free(k->token_path);
	free(k->ca_path);
	free(k->node_name);
	pthread_cond_destroy(&k->wake);
	pthread_mutex_destroy(&k->lock);
	free(k);
	curl_lib.curl_global_cleanup();
}

struct k8s *k8s_start(const struct k8s_config *config, int *err, char *why, size_t why_size)
{
	const char *dir = config->secrets_dir;
	pthread_condattr_t attr;
	struct k8s *k;
	int r;

	char lib_why[DL_LIB_ERROR_MAX];

	/* Loaded here, where Kubernetes is asked: other runs never map it (docs/memory.md). */
	if (curl_lib_load(lib_why, sizeof(lib_why))) {
		snprintf(why, why_size, "it needs %s", lib_why);
		*err = -ELIBACC;
		return NULL;
	}
	if (curl_lib.curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(why, why_size, "libcurl failed to initialise");
		*err = -ENOMEM;
		return NULL;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		curl_lib.curl_global_cleanup();
		*err = -ENOMEM;
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&k->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&k->wake, &attr);
	pthread_condattr_destroy(&attr);
	k->backoff_min_ms = config->backoff_min_ms ? config->backoff_min_ms : 500;
	k->backoff_max_ms = config->backoff_max_ms ? config->backoff_max_ms : 30000;
	if (k->backoff_max_ms < k->backoff_min_ms)
		k->backoff_max_ms = k->backoff_min_ms;
	k->watch_timeout_s = config->watch_timeout_s ? config->watch_timeout_s : 300;

	if (!dir || !*dir)
		dir = getenv("OTELPROFD_K8S_SECRETS_DIR");
	if (!dir || !*dir)
		dir = K8S_DEFAULT_SECRETS_DIR;
	k->api_url = resolve_url(config);
	if (!k->api_url) {
		snprintf(why, why_size, "no API server (KUBERNETES_SERVICE_HOST and OTELPROFD_K8S_API_URL are unset)");
		r = -ENOENT;
		goto fail;
	}
	if (strncmp(k->api_url, "https://", 8) && strncmp(k->api_url, "http://", 7)) {
		snprintf(why, why_size, "the API URL %s is not http:// or https://", k->api_url);
		r = -EINVAL;
		goto fail;
	}
	if (!config->node_name || !*config->node_name) {
		snprintf(why, why_size, "the node name is unknown (set K8S_NODE_NAME from spec.nodeName)");
		r = -EINVAL;
		goto fail;
	}
	k->token_path = path_join(dir, "token");
	k->ca_path = path_join(dir, "ca.crt");
	k->node_name = strdup(config->node_name);
	k->pods = k8s_pods_new(config->max_pods, config->deleted_grace_ns);
	k->curl = curl_lib.curl_easy_init();
	if (!k->token_path || !k->ca_path || !k->node_name || !k->pods || !k->curl) {
		snprintf(why, why_size, "out of memory");
		r = -ENOMEM;
		goto fail;
	}
	if (access(k->token_path, R_OK)) {
		r = -errno;
		snprintf(why, why_size, "no service account token: %s: %s", k->token_path, strerror(errno));
		goto fail;
	}
	if (!strncmp(k->api_url, "https://", 8) && access(k->ca_path, R_OK)) {
		r = -errno;
		snprintf(why, why_size, "no cluster CA: %s: %s", k->ca_path, strerror(errno));
		goto fail;
	}

	/* Options that hold for every request of the handle. */
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM in a threaded program */
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_CAINFO, k->ca_path);
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_TIMEOUT_S);
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_ACCEPT_ENCODING, ""); /* gzip: pod lists compress well */
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_USERAGENT, "otelprofd/" OTELPROFD_VERSION);
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_WRITEDATA, k);
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_NOPROGRESS, 0L);
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_lib.curl_easy_setopt(k->curl, CURLOPT_XFERINFODATA, k);

	r = -pthread_create(&k->thread, NULL, watcher, k);
	if (r) {
		snprintf(why, why_size, "cannot start a thread: %s", strerror(-r));
		goto fail;
	}
	k->started = true;
	return k;
fail:
	*err = r;
	k8s_free(k);
	return NULL;
}

void k8s_stop(struct k8s *k)
{
	if (!k)
		return;
	if (k->started) {
		pthread_mutex_lock(&k->lock);
		__atomic_store_n(&k->stop, true, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&k->wake);
		pthread_mutex_unlock(&k->lock);
		pthread_join(k->thread, NULL);
	}
	k8s_free(k);
}

bool k8s_lookup(struct k8s *k, const char *pod_uid, const char *container_id, struct k8s_pod_names *out)
{
	return k8s_pods_lookup(k->pods, pod_uid, container_id, out);
}

const char *k8s_api_url(const struct k8s *k)
{
	return k->api_url;
}

void k8s_counters(struct k8s *k, struct k8s_counters *out)
{
	uint64_t *src = (uint64_t *)&k->counters, *dst = (uint64_t *)out;

	for (size_t i = 0; i < offsetof(struct k8s_counters, pods) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	k8s_pods_counters(k->pods, &out->pods);
}

void k8s_log_counters(struct k8s *k)
{
	struct k8s_counters c;

	k8s_counters(k, &c);
	log_debug("kubernetes: %" PRIu64 " pods cached, %" PRIu64 " evicted (cache full), %" PRIu64 " lists (%" PRIu64
		  " failed), %" PRIu64 " watches (%" PRIu64 " failed), %" PRIu64 " events (%" PRIu64 " bookmarks), %" PRIu64
		  " 410 Gone, %" PRIu64 " malformed, %" PRIu64 " of %" PRIu64 " lookups found their pod",
		  c.pods.entries, c.pods.evicted, c.lists, c.list_errors, c.watches, c.watch_errors, c.events, c.bookmarks,
		  c.gone, c.pods.malformed, c.pods.hits, c.pods.lookups);
}
