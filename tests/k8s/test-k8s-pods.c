// SPDX-License-Identifier: Apache-2.0
/*
 * The Kubernetes JSON -> pod cache path: PodList and watch events (ADDED, MODIFIED, DELETED,
 * BOOKMARK, ERROR 410) into names by pod uid and container id; runtime prefixes of containerID;
 * the grace period of deleted pods; relists; the bound with eviction; malformed input counted.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process/k8s_pods.h"

#define SEC 1000000000ULL
#define UID1 "0b5e8f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
#define UID2 "11111111-2222-4333-8444-555555555555"
#define CID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define CID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define CID_C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define CID_D "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"

/* A pod as the API writes it (trimmed), with "%s" for extra status fields. */
static char *pod_json(const char *uid, const char *name, const char *ns, const char *rv, const char *statuses)
{
	char *s;

	assert_true(asprintf(&s,
			     "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
			     "\"uid\":\"%s\",\"resourceVersion\":\"%s\",\"labels\":{\"app\":\"x\"},"
			     "\"managedFields\":[{\"fieldsV1\":{\"f:a\":{\"f:b\":{\"f:c\":{\"f:d\":{\"f:e\":{}}}}}}}]},"
			     "\"spec\":{\"nodeName\":\"node-a\",\"containers\":[{\"name\":\"ignored\"}]},"
			     "\"status\":{\"phase\":\"Running\"%s}}",
			     name, ns, uid, rv, statuses) > 0);
	return s;
}

static char *event_json(const char *type, const char *object)
{
	char *s;

	assert_true(asprintf(&s, "{\"type\":\"%s\",\"object\":%s}", type, object) > 0);
	return s;
}

static int apply_event(struct k8s_pods *c, const char *type, const char *object, uint64_t now, char *rv, int *code)
{
	char *e = event_json(type, object);
	int r = k8s_pods_apply_event(c, e, strlen(e), now, rv, K8S_RESOURCE_VERSION_LEN, code);

	free(e);
	return r;
}

static const char *container_of(struct k8s_pods *c, const char *uid, const char *cid)
{
	static struct k8s_pod_names names;

	if (!k8s_pods_lookup(c, uid, cid, &names))
		return NULL;
	return names.container_name;
}

static void test_list_names_every_runtime(void **state)
{
	struct k8s_pods *c = k8s_pods_new(0, 0);
	char rv[K8S_RESOURCE_VERSION_LEN] = "", *p1, *p2, *list;
	struct k8s_pod_names names;
	struct k8s_pods_counters cnt;

	(void)state;
	p1 = pod_json(UID1, "web-7d4b9c-x2x9q", "shop", "90",
		      ",\"initContainerStatuses\":[{\"name\":\"init-db\",\"containerID\":\"cri-o://" CID_C "\"}],"
		      "\"containerStatuses\":[{\"name\":\"nginx\",\"containerID\":\"containerd://" CID_A "\"},"
		      "{\"name\":\"sidecar\",\"containerID\":\"docker://BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\"},"
		      "{\"name\":\"waiting\",\"state\":{\"waiting\":{}}}]");
	p2 = pod_json(UID2, "db-0", "data", "95", "");
	assert_true(asprintf(&list, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"100\"},"
				    "\"items\":[%s,%s]}\n", p1, p2) > 0);
	assert_int_equal(k8s_pods_apply_list(c, list, strlen(list), 1 * SEC, rv, sizeof(rv)), 0);
	assert_string_equal(rv, "100");

	assert_true(k8s_pods_lookup(c, UID1, CID_A, &names));
	assert_string_equal(names.pod_name, "web-7d4b9c-x2x9q");
	assert_string_equal(names.namespace_name, "shop");
	assert_string_equal(names.container_name, "nginx");
	assert_string_equal(container_of(c, UID1, CID_B), "sidecar"); /* docker://, upper case */
	assert_string_equal(container_of(c, UID1, CID_C), "init-db"); /* cri-o://, init container */
	/* A container id the pod does not have: the pod is named, the container is not. */
	assert_string_equal(container_of(c, UID1, CID_D), "");
	assert_string_equal(container_of(c, UID1, NULL), "");
	assert_true(k8s_pods_lookup(c, UID2, "", &names));
	assert_string_equal(names.pod_name, "db-0");
	assert_false(k8s_pods_lookup(c, "99999999-2222-4333-8444-555555555555", CID_A, &names));
	assert_string_equal(names.pod_name, "");
	assert_false(k8s_pods_lookup(c, "", CID_A, &names));

	k8s_pods_counters(c, &cnt);
	assert_int_equal(cnt.entries, 2);
	assert_int_equal(cnt.added, 2);
	assert_int_equal(cnt.malformed, 0);
	free(p1);
	free(p2);
	free(list);
	k8s_pods_free(c);
}

static void test_watch_events(void **state)
{
	struct k8s_pods *c = k8s_pods_new(0, 60 * SEC);
	char rv[K8S_RESOURCE_VERSION_LEN] = "100", *pod;
	int code = -1;
	struct k8s_pods_counters cnt;

	(void)state;
	pod = pod_json(UID1, "web-1", "shop", "101", ",\"containerStatuses\":[]");
	assert_int_equal(apply_event(c, "ADDED", pod, 1 * SEC, rv, &code), K8S_EVENT_ADDED);
	assert_string_equal(rv, "101");
	assert_string_equal(container_of(c, UID1, CID_A), "");
	free(pod);

	/* The container started: MODIFIED gives it an id. */
	pod = pod_json(UID1, "web-1", "shop", "102",
		       ",\"containerStatuses\":[{\"name\":\"app\",\"containerID\":\"containerd://" CID_A "\"}]");
	assert_int_equal(apply_event(c, "MODIFIED", pod, 2 * SEC, rv, &code), K8S_EVENT_MODIFIED);
	assert_string_equal(container_of(c, UID1, CID_A), "app");
	assert_string_equal(rv, "102");
	free(pod);

	/* A bookmark only moves the resourceVersion. */
	assert_int_equal(apply_event(c, "BOOKMARK", "{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"150\"}}",
				     3 * SEC, rv, &code),
			 K8S_EVENT_BOOKMARK);
	assert_string_equal(rv, "150");

	/* Deleted: the names stay for the grace period (the pod's last samples), then go. */
	pod = pod_json(UID1, "web-1", "shop", "160", "");
	assert_int_equal(apply_event(c, "DELETED", pod, 4 * SEC, rv, &code), K8S_EVENT_DELETED);
	assert_string_equal(container_of(c, UID1, CID_A), "app");
	free(pod);
	pod = pod_json(UID2, "other", "shop", "170", "");
	assert_int_equal(apply_event(c, "ADDED", pod, 100 * SEC, rv, &code), K8S_EVENT_ADDED);
	assert_null(container_of(c, UID1, CID_A));
	free(pod);

	/* ERROR carries a Status: 410 means the resourceVersion is too old. */
	code = 0;
	assert_int_equal(apply_event(c, "ERROR",
				     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
				     "\"message\":\"too old resource version: 100 (150)\",\"reason\":\"Expired\",\"code\":410}",
				     101 * SEC, rv, &code),
			 K8S_EVENT_ERROR);
	assert_int_equal(code, 410);
	assert_string_equal(rv, "170");

	k8s_pods_counters(c, &cnt);
	assert_int_equal(cnt.added, 2);
	assert_int_equal(cnt.updated, 1);
	assert_int_equal(cnt.deleted, 1);
	assert_int_equal(cnt.entries, 1);
	k8s_pods_free(c);
}

static void test_relist_deletes_missing_pods(void **state)
{
	struct k8s_pods *c = k8s_pods_new(0, 10 * SEC);
	char rv[K8S_RESOURCE_VERSION_LEN], *p1, *p2, *list;
	struct k8s_pods_counters cnt;

	(void)state;
	p1 = pod_json(UID1, "a", "ns", "1", "");
	p2 = pod_json(UID2, "b", "ns", "2", "");
	assert_true(asprintf(&list, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"10\"},\"items\":[%s,%s]}", p1,
			     p2) > 0);
	assert_int_equal(k8s_pods_apply_list(c, list, strlen(list), 1 * SEC, rv, sizeof(rv)), 0);
	free(list);
	assert_true(asprintf(&list, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"20\"},\"items\":[%s]}", p2) > 0);
	assert_int_equal(k8s_pods_apply_list(c, list, strlen(list), 2 * SEC, rv, sizeof(rv)), 0);
	assert_string_equal(rv, "20");
	/* UID1 went away while nobody watched: deleted, named during the grace period only. */
	assert_non_null(container_of(c, UID1, NULL));
	k8s_pods_counters(c, &cnt);
	assert_int_equal(cnt.deleted, 1);
	assert_int_equal(k8s_pods_apply_list(c, list, strlen(list), 20 * SEC, rv, sizeof(rv)), 0);
	assert_null(container_of(c, UID1, NULL));
	assert_non_null(container_of(c, UID2, NULL));
	/* An empty list empties the cache (after the grace period). */
	free(list);
	list = strdup("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"30\"},\"items\":[]}");
	assert_int_equal(k8s_pods_apply_list(c, list, strlen(list), 21 * SEC, rv, sizeof(rv)), 0);
	assert_int_equal(k8s_pods_apply_list(c, list, strlen(list), 40 * SEC, rv, sizeof(rv)), 0);
	k8s_pods_counters(c, &cnt);
	assert_int_equal(cnt.entries, 0);
	free(p1);
	free(p2);
	free(list);
	k8s_pods_free(c);
}

static void test_bound_evicts(void **state)
{
	struct k8s_pods *c = k8s_pods_new(4, 0);
	char rv[K8S_RESOURCE_VERSION_LEN], uid[40], name[16], *pod;
	struct k8s_pods_counters cnt;
	int code;

	(void)state;
	for (int i = 0; i < 6; i++) {
		snprintf(uid, sizeof(uid), "00000000-0000-4000-8000-%012d", i);
		snprintf(name, sizeof(name), "pod-%d", i);
		pod = pod_json(uid, name, "ns", "1", "");
		assert_int_equal(apply_event(c, "ADDED", pod, (uint64_t)(i + 1) * SEC, rv, &code), K8S_EVENT_ADDED);
		free(pod);
	}
	k8s_pods_counters(c, &cnt);
	assert_int_equal(cnt.entries, 4);
	assert_int_equal(cnt.evicted, 2);
	/* The least recently updated went first. */
	assert_null(container_of(c, "00000000-0000-4000-8000-000000000000", NULL));
	assert_null(container_of(c, "00000000-0000-4000-8000-000000000001", NULL));
	assert_non_null(container_of(c, "00000000-0000-4000-8000-000000000002", NULL));
	/* A deleted pod is evicted before any live one, however recent. */
	pod = pod_json("00000000-0000-4000-8000-000000000005", "pod-5", "ns", "2", "");
	assert_int_equal(apply_event(c, "DELETED", pod, 10 * SEC, rv, &code), K8S_EVENT_DELETED);
	free(pod);
	pod = pod_json("00000000-0000-4000-8000-000000000009", "pod-9", "ns", "3", "");
	assert_int_equal(apply_event(c, "ADDED", pod, 11 * SEC, rv, &code), K8S_EVENT_ADDED);
	free(pod);
	assert_null(container_of(c, "00000000-0000-4000-8000-000000000005", NULL));
	assert_non_null(container_of(c, "00000000-0000-4000-8000-000000000002", NULL));
	assert_non_null(container_of(c, "00000000-0000-4000-8000-000000000009", NULL));
	k8s_pods_counters(c, &cnt);
	assert_int_equal(cnt.entries, 4);
	assert_int_equal(cnt.evicted, 3);
	k8s_pods_free(c);
}

static void test_too_many_containers(void **state)
{
	struct k8s_pods *c = k8s_pods_new(0, 0);
	char rv[K8S_RESOURCE_VERSION_LEN], *statuses = strdup(",\"containerStatuses\":["), *pod, *grown;
	struct k8s_pods_counters cnt;
	int code;

	(void)state;
	for (int i = 0; i < K8S_POD_MAX_CONTAINERS + 3; i++) {
		assert_true(asprintf(&grown, "%s%s{\"name\":\"c%d\",\"containerID\":\"containerd://%064x\"}", statuses,
				     i ? "," : "", i, i) > 0);
		free(statuses);
		statuses = grown;
	}
	assert_true(asprintf(&grown, "%s]", statuses) > 0);
	free(statuses);
	pod = pod_json(UID1, "big", "ns", "1", grown);
	free(grown);
	assert_int_equal(apply_event(c, "ADDED", pod, SEC, rv, &code), K8S_EVENT_ADDED);
	free(pod);
	k8s_pods_counters(c, &cnt);
	assert_int_equal(cnt.containers_dropped, 3);
	{
		char id[65];

		snprintf(id, sizeof(id), "%064x", 5);
		assert_string_equal(container_of(c, UID1, id), "c5");
		snprintf(id, sizeof(id), "%064x", K8S_POD_MAX_CONTAINERS + 1);
		assert_string_equal(container_of(c, UID1, id), "");
	}
	k8s_pods_free(c);
}

static void test_malformed_is_counted(void **state)
{
	static const char *const bad_lists[] = {
		"", "not json", "{\"kind\":\"PodList\",\"items\":[", "{\"kind\":\"PodList\",\"items\":[]} trailing",
		"{\"kind\":\"Status\",\"code\":500,\"items\":[]}", "{\"kind\":\"PodList\",\"items\":{}}", "[]", "null",
	};
	static const char *const bad_events[] = {
		"", "{", "{\"type\":\"ADDED\"}", "{\"type\":\"EXPLODED\",\"object\":{}}", "{\"type\":7,\"object\":{}}",
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"no-uid\",\"namespace\":\"ns\"}}}",
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"uid\":5,\"name\":\"n\",\"namespace\":\"ns\"}}}",
		"{\"type\":\"ADDED\",\"object\":\"pod\"}",
	};
	struct k8s_pods *c = k8s_pods_new(0, 0);
	char rv[K8S_RESOURCE_VERSION_LEN] = "keep", longname[400], *pod, *list;
	struct k8s_pods_counters cnt;
	int code;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_lists) / sizeof(bad_lists[0]); i++)
		assert_int_equal(k8s_pods_apply_list(c, bad_lists[i], strlen(bad_lists[i]), SEC, rv, sizeof(rv)), -EBADMSG);
	assert_string_equal(rv, "keep");
	for (size_t i = 0; i < sizeof(bad_events) / sizeof(bad_events[0]); i++)
		assert_int_equal(k8s_pods_apply_event(c, bad_events[i], strlen(bad_events[i]), SEC, rv, sizeof(rv), &code),
				 -EBADMSG);
	/* A name longer than Kubernetes allows: the pod is skipped, the list is still applied. */
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	pod = pod_json(UID1, longname, "ns", "1", "");
	assert_true(asprintf(&list, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[%s,7]}", pod) > 0);
	assert_int_equal(k8s_pods_apply_list(c, list, strlen(list), SEC, rv, sizeof(rv)), 0);
	assert_null(container_of(c, UID1, NULL));
	/* Deep nesting past the parser's bound is refused, not a crash. */
	{
		char deep[2000];
		size_t n = 0;

		n += (size_t)snprintf(deep, sizeof(deep), "{\"type\":\"ADDED\",\"object\":");
		for (int i = 0; i < 300; i++)
			deep[n++] = '[';
		deep[n] = 0;
		assert_int_equal(k8s_pods_apply_event(c, deep, n, SEC, rv, sizeof(rv), &code), -EBADMSG);
	}
	k8s_pods_counters(c, &cnt);
	assert_int_equal(cnt.malformed, sizeof(bad_lists) / sizeof(bad_lists[0]) +
						sizeof(bad_events) / sizeof(bad_events[0]) + 2 + 1);
	assert_int_equal(cnt.entries, 0);
	free(pod);
	free(list);
	k8s_pods_free(c);
}

static void test_container_id_strip(void **state)
{
	(void)state;
	assert_string_equal(k8s_container_id_strip("containerd://abc"), "abc");
	assert_string_equal(k8s_container_id_strip("docker://abc"), "abc");
	assert_string_equal(k8s_container_id_strip("cri-o://abc"), "abc");
	assert_string_equal(k8s_container_id_strip("abc"), "abc");
	assert_null(k8s_container_id_strip("containerd://"));
	assert_null(k8s_container_id_strip(""));
	assert_null(k8s_container_id_strip(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_names_every_runtime),
		cmocka_unit_test(test_watch_events),
		cmocka_unit_test(test_relist_deletes_missing_pods),
		cmocka_unit_test(test_bound_evicts),
		cmocka_unit_test(test_too_many_containers),
		cmocka_unit_test(test_malformed_is_counted),
		cmocka_unit_test(test_container_id_strip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
