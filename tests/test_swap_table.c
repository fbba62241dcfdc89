/* SPDX-License-Identifier: MIT */
/*
 * Description: the per-cluster swap table (alloc/table.c): reference
 * counts, the HAS_CACHE pin and when a slot becomes free again; counts
 * past what an entry holds (ENT_COUNT_INLINE) in the cluster's side table,
 * round-tripping exactly at the boundary; a table attached exactly while
 * its cluster holds slots, so a device costs under 0.1 byte per slot
 * while nothing is in use (1 TiB included); and random sequences of
 * alloc/dup/free/put/pin/count checked against a reference model.
 */
#include "t_util.h"

#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"

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
 * taken to counts on both sides of the largest count a table entry holds
 * and to USWAP_COUNT_MAX, checking the count after every dup; then
 * dropped back one by one, checking the slot and that its neighbours kept
 * their counts.
 */
static void test_counts_past_the_entry_round_trip_exactly(void **state)
{
	static const long values[] = { 61, ENT_COUNT_INLINE, ENT_COUNT_INLINE + 1,
				       ENT_COUNT_INLINE + 2, 40000, USWAP_COUNT_MAX };
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
	t_eq(uswap_dup(u, nth(folio, N - 1)), -EOVERFLOW);
	assert_slot(u, nth(folio, N - 1), USWAP_COUNT_MAX, true);
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

/* The side table (2 bytes per slot of the cluster) exists exactly while
 * some slot of the cluster counts past the entry: it is there after the
 * count crosses ENT_COUNT_INLINE and gone when it drops back. */
static void test_side_table_lives_exactly_while_a_count_is_past_the_entry(void **state)
{
	int type;
	struct uswap *u = new_instance(state, &type);
	uswap_entry_t e = t_alloc(u, 0);
	uint64_t base;

	for (unsigned int c = 0; c < ENT_COUNT_INLINE; c++)
		t_eq(uswap_dup(u, e), 0);
	base = t_info(u, type).metadata_bytes;
	t_eq(uswap_dup(u, e), 0);
	t_eq_u64(t_info(u, type).metadata_bytes, base + USWAP_CLUSTER_SLOTS * sizeof(uint16_t));
	t_eq(uswap_free(u, e, 1), 0);
	t_eq_u64(t_info(u, type).metadata_bytes, base);
	assert_slot(u, e, ENT_COUNT_INLINE, true);
	t_check(u);
}

/*
 * Nothing in use costs under 0.1 byte per slot: the cluster descriptors
 * and the device's fixed part, no table. Slots in a cluster bring its
 * table (8 bytes a slot); when the cluster empties the table leaves it,
 * and the pool it returns to is trimmed back to a bounded size.
 */
static void test_free_clusters_hold_no_table_and_cost_under_0_1_byte_per_slot(void **state)
{
	struct uswap *u = t_create(2, 0);
	int type = t_swapon(u, 512 * USWAP_CLUSTER_SLOTS, 0); /* 1 GiB */
	struct swap_device *si = u->devs[type];
	uint64_t static_bytes = t_info(u, type).metadata_bytes;
	uswap_entry_t held[64];

	*state = u;
	printf("# static metadata: %.4f bytes per slot\n",
	       (double)static_bytes / (512.0 * USWAP_CLUSTER_SLOTS));
	t_true(static_bytes <= 512 * USWAP_CLUSTER_SLOTS / 10);
	t_eq(atomic_load(&si->tables_used), 0);
	for (unsigned int i = 0; i < T_ARRAY_SIZE(held); i++)
		held[i] = t_alloc(u, 9); /* one wholly free cluster each */
	t_eq(atomic_load(&si->tables_used), T_ARRAY_SIZE(held));
	t_true(t_info(u, type).metadata_bytes >=
	       static_bytes + T_ARRAY_SIZE(held) * sizeof(struct swap_table));
	t_check(u);
	for (unsigned int i = 0; i < T_ARRAY_SIZE(held); i++)
		t_put(u, held[i], 9);
	t_eq(atomic_load(&si->tables_used), 0);
	t_true(atomic_load(&si->table_pool_nr) <= 2 * table_pool_target(si));
	t_check(u);
}

/* A 1 TiB device (2^28 slots) swaps on without touching 1 TiB of
 * anything: 16 MiB of cluster descriptors, under 0.1 byte per slot. */
static void test_1tib_device_costs_under_0_1_byte_per_slot(void **state)
{
	const uint64_t slots = UINT64_C(1) << 28;
	struct uswap *u = t_create(2, 0);
	int type = t_swapon(u, slots, 0);
	uswap_entry_t e;

	*state = u;
	t_true(t_info(u, type).metadata_bytes <= slots / 10);
	e = t_alloc(u, 0);
	assert_slot(u, e, 0, true);
	t_put(u, e, 0);
	t_eq_u64(t_info(u, type).inuse, 0);
}

/* With the pool empty and refills failing, an allocation that needs a
 * new cluster gets -ENOMEM and nothing changes; it succeeds once memory
 * is back. */
static void test_failed_table_refill_is_enomem_and_changes_nothing(void **state)
{
	int type;
	struct uswap *u = new_instance(state, &type);
	uswap_entry_t e;

	table_pool_fail_refills(u->devs[type], UINT32_MAX);
	t_eq(uswap_alloc(u, 9, &e), -ENOMEM);
	t_eq(uswap_alloc(u, 0, &e), -ENOMEM); /* no cluster has a table yet */
	t_eq_u64(t_info(u, type).inuse, 0);
	t_true(t_stats(u).table_refill_fail >= 2);
	t_check(u);
	table_pool_fail_refills(u->devs[type], 0);
	t_eq(uswap_alloc(u, 9, &e), 0);
	t_put(u, e, 9);
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

/* ------------------------------------------------------------------
 * Random sequences against a reference model
 * ------------------------------------------------------------------ */

#define FUZZ_CLUSTERS 2 /* USWAP_MIN_CLUSTERS: slot 0 is the header */
#define FUZZ_SLOTS    (FUZZ_CLUSTERS * USWAP_CLUSTER_SLOTS)

/* What the allocator must hold for each slot: a count and a pin. */
struct model_slot {
	uint32_t count;
	bool pin;
};

struct model {
	struct uswap *u;
	int type;
	struct model_slot s[FUZZ_SLOTS];
	uint64_t rng, ops;
};

static bool model_used(const struct model *m, uint64_t off)
{
	return m->s[off].count || m->s[off].pin;
}

static uswap_entry_t model_entry(const struct model *m, uint64_t off)
{
	return uswap_entry((unsigned int)m->type, off);
}

/* The allocator must not split a request while a whole cluster is free
 * (cluster 0 holds the header, so only cluster 1 can be). */
static bool model_has_free_cluster(const struct model *m)
{
	for (uint64_t c = 1; c < FUZZ_CLUSTERS; c++) {
		uint64_t i;

		for (i = 0; i < USWAP_CLUSTER_SLOTS && !model_used(m, c * USWAP_CLUSTER_SLOTS + i); i++)
			;
		if (i == USWAP_CLUSTER_SLOTS)
			return true;
	}
	return false;
}

/* ... and must find an order-0 slot whenever one is free. */
static bool model_has_free_slot(const struct model *m)
{
	for (uint64_t off = 1; off < FUZZ_SLOTS; off++)
		if (!model_used(m, off))
			return true;
	return false;
}

static void fuzz_alloc(struct model *m, unsigned int order)
{
	uswap_entry_t e;
	int rc = uswap_alloc(m->u, order, &e);
	uint64_t off = uswap_entry_offset(e);

	if (rc == -ENOSPC || rc == -E2BIG) {
		if (order == 0 ? model_has_free_slot(m) : model_has_free_cluster(m))
			fail_msg("op %llu: order-%u alloc %s with room in the model",
				 (unsigned long long)m->ops, order, t_errname(rc));
		return;
	}
	t_eq(rc, 0);
	t_eq(off % (1u << order), 0);
	for (uint64_t i = off; i < off + (1u << order); i++) {
		if (i == 0 || model_used(m, i))
			fail_msg("op %llu: slot %llu handed out twice",
				 (unsigned long long)m->ops, (unsigned long long)i);
		m->s[i].pin = true;
	}
}

static void fuzz_dup(struct model *m, uint64_t off)
{
	struct model_slot *s = &m->s[off];
	int want = !model_used(m, off) ? -ENOENT : s->count == USWAP_COUNT_MAX ? -EOVERFLOW : 0;

	t_eq(uswap_dup(m->u, model_entry(m, off)), want);
	if (want == 0)
		s->count++;
}

static void fuzz_free(struct model *m, uint64_t off)
{
	struct model_slot *s = &m->s[off];
	int want = s->count ? 0 : -ENOENT;

	t_eq(uswap_free(m->u, model_entry(m, off), 1), want);
	if (want == 0)
		s->count--;
}

static void fuzz_put(struct model *m, uint64_t off)
{
	struct model_slot *s = &m->s[off];
	int want = s->pin ? 0 : -ENOENT;

	t_eq(uswap_put_folio(m->u, model_entry(m, off), 0), want);
	if (want == 0)
		s->pin = false;
}

static void fuzz_pin(struct model *m, uint64_t off)
{
	struct model_slot *s = &m->s[off];
	int want = !model_used(m, off) ? -ENOENT : s->pin ? -EEXIST : 0;

	t_eq(uswap_cache_pin(m->u, model_entry(m, off)), want);
	if (want == 0)
		s->pin = true;
}

static void fuzz_count(struct model *m, uint64_t off)
{
	bool cache = false;
	long rc = uswap_slot_count(m->u, model_entry(m, off), &cache);

	if (!model_used(m, off)) {
		t_eq(rc, -ENOENT);
		return;
	}
	t_eq(rc, m->s[off].count);
	t_eq(cache, m->s[off].pin);
}

/* Take one slot across the side-table boundary and part way back. */
static void fuzz_burst(struct model *m, uint64_t off)
{
	unsigned int up = ENT_COUNT_INLINE + 2 - (unsigned int)(m->rng % 4);

	if (!model_used(m, off) || m->s[off].count > 100)
		return;
	for (unsigned int i = 0; i < up; i++)
		fuzz_dup(m, off);
	fuzz_count(m, off);
	for (unsigned int i = 0, down = (unsigned int)t_rand_below(&m->rng, up + 1); i < down; i++)
		fuzz_free(m, off);
	fuzz_count(m, off);
}

static void fuzz_step(struct model *m)
{
	uint64_t r = t_rand_below(&m->rng, 1000);
	uint64_t off = 1 + t_rand_below(&m->rng, FUZZ_SLOTS - 1); /* never the header */

	m->ops++;
	if (r < 250)
		fuzz_alloc(m, t_rand_below(&m->rng, 4) ? 0 : (unsigned int)t_rand_below(&m->rng, 10));
	else if (r < 450)
		fuzz_dup(m, off);
	else if (r < 650)
		fuzz_free(m, off);
	else if (r < 850)
		fuzz_put(m, off);
	else if (r < 900)
		fuzz_pin(m, off);
	else if (r < 999)
		fuzz_count(m, off);
	else
		fuzz_burst(m, off);
}

/* Drop every count and pin the model holds: the device must be empty,
 * and every cluster but the header's without a table. */
static void fuzz_drain(struct model *m)
{
	for (uint64_t off = 1; off < FUZZ_SLOTS; off++) {
		while (m->s[off].count)
			fuzz_free(m, off);
		if (m->s[off].pin)
			fuzz_put(m, off);
	}
	t_eq_u64(t_info(m->u, m->type).inuse, 0);
	t_check(m->u);
	t_true(atomic_load(&m->u->devs[m->type]->tables_used) <= 1);
}

/*
 * Random alloc (orders 0..9) / dup / free / put / cache pin / count
 * sequences on a two-cluster device, every answer and every count
 * compared with the reference model, uswap_check() every 1000 steps, and
 * the device drained empty between rounds (so clusters give their tables
 * back and take them again). Seed: $USWAP_TEST_SEED or random, printed.
 */
static void test_random_sequences_match_the_reference_model(void **state)
{
	struct model *m = calloc(1, sizeof(*m));
	uint64_t seed = t_env_seed();
	unsigned int steps = (unsigned int)(200000 * t_env_scale());

	t_true(m != NULL);
	m->u = t_create(2, 0);
	*state = m->u;
	m->type = t_swapon(m->u, FUZZ_SLOTS, 0);
	m->rng = seed;
	printf("# seed %llu, %u steps\n", (unsigned long long)seed, steps);
	for (unsigned int i = 1; i <= steps; i++) {
		fuzz_step(m);
		if (i % 1000 == 0)
			t_check(m->u);
		if (i % 20000 == 0)
			fuzz_drain(m);
	}
	fuzz_drain(m);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_counts_past_the_entry_round_trip_exactly, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_side_table_lives_exactly_while_a_count_is_past_the_entry, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_free_clusters_hold_no_table_and_cost_under_0_1_byte_per_slot, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_1tib_device_costs_under_0_1_byte_per_slot, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_failed_table_refill_is_enomem_and_changes_nothing, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_random_sequences_match_the_reference_model, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_free_nr_drops_one_reference_from_every_slot_of_a_folio, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_free_nr_with_an_unreferenced_slot_changes_nothing, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_cache_pin_is_exclusive, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_slot_freed_only_when_count_and_pin_are_both_gone, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_put_folio_order0_frees_slots_of_a_split_folio_one_by_one, t_setup_cpu0, t_teardown_instance),
	};

	return t_run(tests);
}
