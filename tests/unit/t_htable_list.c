/* Unit tests for libutil/htable and libutil/list. */
#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "htable.h"
#include "list.h"

ATF_TC_WITHOUT_HEAD(htable_basic);
ATF_TC_BODY(htable_basic, tc)
{
	htable_t *t = htable_new(0, 0);
	char key[32];
	/* Enough keys to force several doublings. */
	for (long i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "key%ld", i);
		ATF_REQUIRE(htable_add(t, key, (void *)(i + 1)) != NULL);
	}
	ATF_CHECK_EQ(htable_size(t), 5000);
	ATF_CHECK(htable_add(t, "key7", (void *)1) == NULL);	/* duplicate */
	ATF_CHECK_EQ((long)htable_get(t, "key4999"), 5000);
	ATF_CHECK(htable_get(t, "KEY7") == NULL);	/* case matters here */
	ATF_CHECK_EQ((long)htable_put(t, "key7", (void *)99), 8);
	ATF_CHECK_EQ((long)htable_get(t, "key7"), 99);
	ATF_CHECK_EQ((long)htable_delete(t, "key7"), 99);
	ATF_CHECK(htable_get(t, "key7") == NULL);
	ATF_CHECK(htable_delete(t, "key7") == NULL);
	ATF_CHECK_EQ(htable_size(t), 4999);
	size_t n;
	htable_entry_t **v = htable_list(t, &n);
	ATF_CHECK_EQ(n, 4999);
	free(v);
	htable_free(t, NULL);
}

ATF_TC_WITHOUT_HEAD(htable_nocase);
ATF_TC_BODY(htable_nocase, tc)
{
	htable_t *t = htable_new(4, HTABLE_FLAG_NOCASE);
	ATF_REQUIRE(htable_add(t, "Example.COM", strdup("v")) != NULL);
	ATF_CHECK_STREQ(htable_get(t, "example.com"), "v");
	ATF_CHECK(htable_add(t, "EXAMPLE.com", NULL) == NULL);
	htable_free(t, free);
}

struct item { int v; list_node_t node; };

ATF_TC_WITHOUT_HEAD(list_ops);
ATF_TC_BODY(list_ops, tc)
{
	list_t l;
	struct item it[5];
	list_node_t *n, *tmp;
	int want[] = { 4, 0, 2, 1, 3 };
	int k = 0;

	list_init(&l);
	ATF_CHECK(list_empty(&l));
	for (int i = 0; i < 4; i++) {
		it[i].v = i;
		list_append(&l, &it[i].node);
	}
	it[4].v = 4;
	list_prepend(&l, &it[4].node);
	/* move 2 before 1 */
	list_remove(&it[2].node);
	ATF_CHECK(!list_linked(&it[2].node));
	list_insert_before(&it[1].node, &it[2].node);
	ATF_CHECK_EQ(list_count(&l), 5);
	list_foreach(n, &l)
		ATF_CHECK_EQ(list_entry(n, struct item, node)->v, want[k++]);
	ATF_CHECK_EQ(list_entry(list_first(&l), struct item, node)->v, 4);
	ATF_CHECK_EQ(list_entry(list_last(&l), struct item, node)->v, 3);
	ATF_CHECK(list_next(&l, &it[3].node) == NULL);
	ATF_CHECK(list_prev(&l, &it[4].node) == NULL);
	list_foreach_safe(n, tmp, &l)
		list_remove(n);
	ATF_CHECK(list_empty(&l));
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, htable_basic);
	ATF_TP_ADD_TC(tp, htable_nocase);
	ATF_TP_ADD_TC(tp, list_ops);
	return atf_no_error();
}
