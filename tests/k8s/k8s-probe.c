// SPDX-License-Identifier: Apache-2.0
/*
 * Drives the Kubernetes watcher (daemon/process/k8s.c) for test_k8s_api.py: starts it against the API named by
 * OTELPROFD_K8S_API_URL / OTELPROFD_K8S_SECRETS_DIR, waits until its counters reach the given values
 * (or the timeout), then prints the counters, the given lookups and how long stopping took.
 *
 * Usage: k8s-probe NODE TIMEOUT_MS COUNTER=MIN[,COUNTER=MIN...] [UID/CONTAINER_ID...]
 * Counters: lists, list_errors, watches, watch_errors, events, bookmarks, gone. Exit 0 when reached, 1 not.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "process/k8s.h"
#include "log.h"

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t *counter(struct k8s_counters *c, const char *name)
{
	static const struct {
		const char *name;
		size_t offset;
	} names[] = {
		{ "lists", offsetof(struct k8s_counters, lists) },
		{ "list_errors", offsetof(struct k8s_counters, list_errors) },
		{ "watches", offsetof(struct k8s_counters, watches) },
		{ "watch_errors", offsetof(struct k8s_counters, watch_errors) },
		{ "events", offsetof(struct k8s_counters, events) },
		{ "bookmarks", offsetof(struct k8s_counters, bookmarks) },
		{ "gone", offsetof(struct k8s_counters, gone) },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(names[i].name, name))
			return (uint64_t *)((char *)c + names[i].offset);
	fprintf(stderr, "k8s-probe: unknown counter %s\n", name);
	exit(2);
}

static bool reached(struct k8s_counters *c, const char *conditions)
{
	char *copy = strdup(conditions), *save = NULL, *tok;
	bool ok = true;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq)
			exit(2);
		*eq = 0;
		if (*counter(c, tok) < strtoull(eq + 1, NULL, 10))
			ok = false;
	}
	free(copy);
	return ok;
}

int main(int argc, char **argv)
{
	struct k8s_counters c;
	struct k8s *k;
	char why[512];
	uint64_t deadline, t;
	bool ok;
	int r;

	if (argc < 4) {
		fprintf(stderr, "usage: k8s-probe NODE TIMEOUT_MS COUNTER=MIN[,...] [UID/CID...]\n");
		return 2;
	}
	log_set_level(LOG_LEVEL_INFO);
	k = k8s_start(&(struct k8s_config){ .node_name = argv[1], .backoff_min_ms = 50, .backoff_max_ms = 200 }, &r,
		      why, sizeof(why));
	if (!k) {
		printf("start_error=%d %s\n", r, why);
		return 1;
	}
	deadline = ms_now() + strtoull(argv[2], NULL, 10);
	do {
		k8s_counters(k, &c);
		ok = reached(&c, argv[3]);
		if (!ok)
			usleep(20000);
	} while (!ok && ms_now() < deadline);
	printf("counters lists=%" PRIu64 " list_errors=%" PRIu64 " watches=%" PRIu64 " watch_errors=%" PRIu64
	       " events=%" PRIu64 " bookmarks=%" PRIu64 " gone=%" PRIu64 " entries=%" PRIu64 " malformed=%" PRIu64
	       " deleted=%" PRIu64 "\n",
	       c.lists, c.list_errors, c.watches, c.watch_errors, c.events, c.bookmarks, c.gone, c.pods.entries,
	       c.pods.malformed, c.pods.deleted);
	for (int i = 4; i < argc; i++) {
		char *arg = strdup(argv[i]), *slash = strchr(arg, '/');
		struct k8s_pod_names names;

		if (slash)
			*slash++ = 0;
		if (k8s_lookup(k, arg, slash, &names))
			printf("lookup %s pod=%s namespace=%s container=%s\n", argv[i], names.pod_name, names.namespace_name,
			       names.container_name);
		else
			printf("lookup %s none\n", argv[i]);
		free(arg);
	}
	t = ms_now();
	k8s_stop(k);
	printf("stop_ms=%" PRIu64 "\nreached=%d\n", ms_now() - t, ok);
	return ok ? 0 : 1;
}
