// SPDX-License-Identifier: Apache-2.0
/*
 * The flame graph's data (output/flame_tree.c) and page (output/html_page.c): stacks merged into a
 * tree, its compact encoding (preorder, siblings by name, levels up and frame per node in base64url,
 * sparse self values), names escaped so none closes the page's <script>, the node bound counted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/flame_tree.h"
#include "output/html_page.h"

static uint32_t frame(struct flame *f, const char *name)
{
	int64_t id = flame_frame(f, &(struct flame_frame_desc){ .name = name, .type = "native" });

	assert_true(id > 0);
	return (uint32_t)id;
}

static char *json(const struct flame *f, bool page)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	assert_int_equal(page ? html_page_write(f, out) : flame_write_json(f, out), 0);
	fclose(out);
	return text;
}

static void test_tree_encoding(void **state)
{
	struct flame *f = flame_new(0);
	int view = flame_add_view(f, "On-CPU", "samples", false);
	uint32_t a = frame(f, "a"), e = frame(f, "e"), b = frame(f, "b"), d = frame(f, "d"), c = frame(f, "c");
	char *text;

	(void)state;
	/* Added out of order: the page gets siblings by name. */
	assert_int_equal(flame_add_stack(f, view, (uint32_t[]){ a, e }, 2, 0, 3), 0);
	assert_int_equal(flame_add_stack(f, view, (uint32_t[]){ a, b, d }, 3, 0, 2), 0);
	assert_int_equal(flame_add_stack(f, view, (uint32_t[]){ a, b, c }, 3, 0, 1), 0);
	assert_int_equal(flame_add_stack(f, view, (uint32_t[]){ a, b, c }, 3, 0, 1), 0);
	assert_int_equal(flame_total(f, view, 0), 7);
	text = json(f, false);
	print_message("%s\n", text);
	/* Frames 0 root, a=1 e=2 b=3 d=4 c=5. Preorder: root, a (up 0), b (0), c (0), d (1), e (2). */
	assert_non_null(strstr(text, "\"n\":6,\"k\":1,\"t\":\"ABADAFBECC\""));
	/* Self values at nodes 3 (c: 2), 4 (d: 2), 5 (e: 3), as distances from the previous one. */
	assert_non_null(strstr(text, "\"v\":[3,2,1,2,1,3]"));
	assert_non_null(strstr(text, "\"diff\":false,\"total\":[7,0]"));
	free(text);
	flame_free(f);
}

static int count_stack(void *ctx, const uint32_t *frames, size_t n, const uint64_t self[2])
{
	(void)frames;
	*(uint64_t *)ctx += n * 100 + self[0];
	return 0;
}

static void test_escaping_and_bound(void **state)
{
	struct flame *f = flame_new(4); /* root + 3 nodes */
	int view = flame_add_view(f, "Diff", "samples", true);
	uint32_t x = frame(f, "</script><b>\"q\"&\n"), y = frame(f, "y"), z = frame(f, "z");
	uint64_t sum = 0;
	char *text;

	(void)state;
	assert_int_equal(flame_add_stack(f, view, (uint32_t[]){ x, y, z }, 3, 1, 5), 0);
	assert_int_equal(flame_add_stack(f, view, (uint32_t[]){ x, z }, 2, 0, 1), -ENOSPC);
	assert_int_equal(flame_dropped(f), 1);
	assert_int_equal(flame_add_stack(f, view, (uint32_t[]){ 999 }, 1, 0, 1), -EINVAL);
	assert_int_equal(flame_each_stack(f, view, count_stack, &sum), 0);
	assert_int_equal(sum, 300); /* the one stack: 3 frames, self 0 in slot 0 */
	text = json(f, true);
	assert_null(strstr(text, "</script><b>"));
	assert_non_null(strstr(text, "\"\\u003c/script\\u003e\\u003cb\\u003e\\\"q\\\"\\u0026\\u000a\""));
	assert_non_null(strstr(text, "\"w\":[3,5]"));
	assert_non_null(strstr(text, "\"dropped\":1"));
	assert_non_null(strstr(text, "</script>\n</body></html>\n"));
	free(text);
	flame_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_encoding),
		cmocka_unit_test(test_escaping_and_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
