/* SPDX-License-Identifier: MIT */
/*
 * Description: the swap_map (alloc/swap_map.c): reference counts, the
 * HAS_CACHE pin and when a slot becomes free again. Counts past 62 live in
 * a per-cluster side table; they must round-trip exactly, one by one, and
 * without disturbing neighbouring slots of the same cluster.
 */
#include "t_util.h"

#include <string.h>

/* An instance with one 8-cluster device; *type receives its type. */
static struct uswap *new_instance(void **state, int *type)
{
	struct uswap *u = t_create(2, 0);

	*state = u;
	*type = t_swapon(u, 8 * USWAP_CLUSTER_SLOTS, 0);
	return u;
}

static uswap_entry_t nth(uswap_entry_t first, uint64_t i)
{
	return uswap_entry(uswap_entry_type(first), uswap_entry_offset(first) + i);
}

/* Assert the slot's count and pin. */
#define assert_slot(u, e, count, pinned)                                     \
	do {                                                                 \
		bool c_ = !(pinned);                                         \
		t_eq(uswap_slot_count((u), (e), &c_), (count));              \
		t_eq(c_, (pinned));                                          \
	} while (0)

static void assert_slot_free(struct uswap *u, uswap_entry_t e)
{
	bool cache;

	t_eq(uswap_slot_count(u, e, &cache), -ENOENT);
}

/*
 * Six slots of one order-3 folio (so one cluster, one side table) are
 * taken to 61, 62, 63, 64, 1000 and 65535 references, checking the count
 * after every dup; then dropped back one by one, checking the slot and
 * that its neighbours kept their counts.
 */
static void test_counts_past_62_round_trip_exactly(void **state)
{
	static const long values[] = { 61, 62, 63, 64, 1000, USWAP_COUNT_MAX };
	enum { N = T_ARRAY_SIZE(values) };
	int type;
	struct uswap *u = new_instance(state, &type);
	uswap_entry_t folio = t_alloc(u, 3);

	for (int i = 0; i < N; i++) {
		for (long c = 1; c <= values[i]; c++) {
			int rc = uswap_dup(u, nth(folio, i));

			if (rc != 0)
				fail_msg("dup %ld of slot %d: %s", c, i, t_errname(rc));
			assert_slot(u, nth(folio, i), c, true);
		}
	}
	for (int i = 0; i < N; i++)
		assert_slot(u, nth(folio, i), values[i], true);
	/* Slots 6 and 7 of the folio were never dup'ed. */
	assert_slot(u, nth(folio, 6), 0, true);
	assert_slot(u, nth(folio, 7), 0, true);

	for (int i = N - 1; i >= 0; i--) {
		for (long c = values[i] - 1; c >= 0; c--) {
			t_eq(uswap_free(u, nth(folio, i), 1), 0);
			assert_slot(u, nth(folio, i), c, true);
		}
		/* The neighbours still hold exactly their counts. */
		for (int j = 0; j < i; j++)
			assert_slot(u, nth(folio, j), values[j], true);
	}
	t_eq_u64(t_info(u, type).inuse, 8);
	t_check(u);
	t_put(u, folio, 3);
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
}

/* uswap_free(nr = 8) drops one reference from each slot of the folio. */
static void test_free_nr_drops_one_reference_from_every_slot_of_a_folio(void **state)
{
	int type;
	struct uswap *u = new_instance(state, &type);
	uswap_entry_t folio = t_alloc(u, 3);
	struct uswap_stats before, after;

	for (int i = 0; i < 8; i++) {
		t_eq(uswap_dup(u, nth(folio, i)), 0);
		t_eq(uswap_dup(u, nth(folio, i)), 0);
	}
	t_eq(uswap_free(u, folio, 8), 0);
	for (int i = 0; i < 8; i++)
		assert_slot(u, nth(folio, i), 1, true);

	/* Pin dropped, one reference each left: still in use. */
	t_put(u, folio, 3);
	for (int i = 0; i < 8; i++)
		assert_slot(u, nth(folio, i), 1, false);
	t_eq_u64(t_info(u, type).inuse, 8);

	before = t_stats(u);
	t_eq(uswap_free(u, folio, 8), 0);
	after = t_stats(u);
	for (int i = 0; i < 8; i++)
		assert_slot_free(u, nth(folio, i));
	t_eq_u64(t_info(u, type).inuse, 0);
	t_eq_u64(after.free_slots - before.free_slots, 8);
	t_check(u);
}

/* One slot of the range has no reference: -ENOENT and nothing changes. */
static void test_free_nr_with_an_unreferenced_slot_changes_nothing(void **state)
{
	int type;
	struct uswap *u = new_instance(state, &type);
	uswap_entry_t folio = t_alloc(u, 3);
	struct uswap_stats before, after;

	for (int i = 0; i < 7; i++)
		t_eq(uswap_dup(u, nth(folio, i)), 0);
	before = t_stats(u);
	t_eq(uswap_free(u, folio, 8), -ENOENT);
	after = t_stats(u);
	t_eq_u64(after.bad_free - before.bad_free, 1);
	t_eq_u64(after.free_slots - before.free_slots, 0);
	for (int i = 0; i < 7; i++)
		assert_slot(u, nth(folio, i), 1, true);
	assert_slot(u, nth(folio, 7), 0, true);
	t_check(u);

	t_eq(uswap_free(u, folio, 7), 0);
	t_put(u, folio, 3);
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
}

/* HAS_CACHE has one owner: a second pin gets -EEXIST. */
static void test_cache_pin_is_exclusive(void **state)
{
	int type;
	struct uswap *u = new_instance(state, &type);
	uswap_entry_t e = t_alloc(u, 0);

	/* A new allocation already holds the pin. */
	t_eq(uswap_cache_pin(u, e), -EEXIST);
	t_eq(uswap_dup(u, e), 0);
	t_put(u, e, 0);
	assert_slot(u, e, 1, false);

	/* Swap-in: whoever pins first owns it. */
	t_eq(uswap_cache_pin(u, e), 0);
	assert_slot(u, e, 1, true);
	t_eq(uswap_cache_pin(u, e), -EEXIST);
	assert_slot(u, e, 1, true);

	t_eq(uswap_free(u, e, 1), 0);
	t_put(u, e, 0);
	assert_slot_free(u, e);
	/* A free slot can be neither pinned nor dup'ed. */
	t_eq(uswap_cache_pin(u, e), -ENOENT);
	t_eq(uswap_dup(u, e), -ENOENT);
	assert_slot_free(u, e);
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
}

/* inuse and free_slots after each step of a slot's life. */
static void expect_usage(struct uswap *u, int type, uint64_t inuse,
			 uint64_t free_slots_base, uint64_t freed)
{
	t_eq_u64(t_info(u, type).inuse, inuse);
	t_eq_u64(t_stats(u).free_slots - free_slots_base, freed);
}

static void test_slot_freed_only_when_count_and_pin_are_both_gone(void **state)
{
	int type;
	struct uswap *u = new_instance(state, &type);
	uint64_t base = t_stats(u).free_slots;
	uswap_entry_t a = t_alloc(u, 0), b = t_alloc(u, 0);

	t_eq(uswap_dup(u, a), 0);
	t_eq(uswap_dup(u, b), 0);
	expect_usage(u, type, 2, base, 0);

	/* a: the pin goes first; the count keeps it in use. */
	t_put(u, a, 0);
	assert_slot(u, a, 1, false);
	expect_usage(u, type, 2, base, 0);
	t_eq(uswap_free(u, a, 1), 0);
	assert_slot_free(u, a);
	expect_usage(u, type, 1, base, 1);

	/* b: the count goes first; the pin keeps it in use. */
	t_eq(uswap_free(u, b, 1), 0);
	assert_slot(u, b, 0, true);
	expect_usage(u, type, 1, base, 1);
	t_put(u, b, 0);
	assert_slot_free(u, b);
	expect_usage(u, type, 0, base, 2);
	t_check(u);
}

/* Dropping the pin slot by slot (a split folio) frees each slot. */
static void test_put_folio_order0_frees_slots_of_a_split_folio_one_by_one(void **state)
{
	int type;
	struct uswap *u = new_instance(state, &type);
	uswap_entry_t folio = t_alloc(u, 3);

	for (int i = 0; i < 8; i++) {
		t_put(u, nth(folio, i), 0);
		assert_slot_free(u, nth(folio, i));
		t_eq_u64(t_info(u, type).inuse, 7 - i);
		if (i < 7)
			assert_slot(u, nth(folio, i + 1), 0, true);
	}
	t_check(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_counts_past_62_round_trip_exactly, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_free_nr_drops_one_reference_from_every_slot_of_a_folio, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_free_nr_with_an_unreferenced_slot_changes_nothing, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_cache_pin_is_exclusive, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_slot_freed_only_when_count_and_pin_are_both_gone, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_put_folio_order0_frees_slots_of_a_split_folio_one_by_one, t_setup_cpu0, t_teardown_instance),
	};

	return t_run(tests);
}
