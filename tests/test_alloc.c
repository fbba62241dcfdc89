/* SPDX-License-Identifier: MIT */
/*
 * Description: single-threaded checks of the slot allocator (alloc/,
 * cluster lists): natural alignment per order, no slot handed out twice,
 * every freed slot reusable, order-9 served from the one wholly free
 * cluster and -E2BIG (counted once) when none is left, and order-4 runs
 * freed inside clusters reused without a fallback.
 *
 * The calling thread is pinned to CPU 0 so per-CPU cluster caches behave
 * the same on every run.
 */
#include "t_util.h"

#include <stdlib.h>
#include <string.h>

#define SLOTS(order) (UINT64_C(1) << (order))

/* The instance of this test, destroyed by teardown even on failure. */
static struct uswap *new_instance_quota(void **state, unsigned int ring_quota)
{
	struct uswap *u = t_create(2, ring_quota);

	*state = u;
	return u;
}

static struct uswap *new_instance(void **state)
{
	struct uswap *u = t_create(2, 0);

	*state = u;
	return u;
}

/* Entry lies on @type, is 2^order aligned, avoids slot 0 and the end. */
static void assert_entry_sane(uswap_entry_t e, int type, uint64_t nr_slots,
			      unsigned int order)
{
	uint64_t off = uswap_entry_offset(e);

	t_eq(uswap_entry_type(e), type);
	t_true(off != 0);
	t_eq_u64(off % SLOTS(order), 0);
	t_true(off + SLOTS(order) <= nr_slots);
}

static void test_alloc_returns_naturally_aligned_pinned_run_for_every_order(void **state)
{
	struct uswap *u = new_instance(state);
	const uint64_t nr_slots = 32 * USWAP_CLUSTER_SLOTS;
	int type = t_swapon(u, nr_slots, 0);
	uswap_entry_t got[USWAP_NR_ORDERS];
	uint64_t inuse = 0;

	for (unsigned int order = 0; order < USWAP_NR_ORDERS; order++) {
		struct uswap_stats before = t_stats(u), after;

		got[order] = t_alloc(u, order);
		after = t_stats(u);
		assert_entry_sane(got[order], type, nr_slots, order);
		/* A new folio enters the swap cache: pin set, count 0. */
		for (uint64_t i = 0; i < SLOTS(order); i++) {
			uswap_entry_t s = uswap_entry(type,
				uswap_entry_offset(got[order]) + i);
			bool cache = false;

			t_eq(uswap_slot_count(u, s, &cache), 0);
			t_true(cache);
		}
		t_eq_u64(after.swpout[order] - before.swpout[order], 1);
		inuse += SLOTS(order);
		t_eq_u64(t_info(u, type).inuse, inuse);
	}
	t_check(u);
	for (unsigned int order = 0; order < USWAP_NR_ORDERS; order++)
		t_put(u, got[order], order);
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
}

/* Set the bits of [off, off+n) in @map; false if one was already set. */
static bool map_take(uint8_t *map, uint64_t off, uint64_t n)
{
	for (uint64_t i = off; i < off + n; i++)
		if (map[i])
			return false;
	memset(map + off, 1, n);
	return true;
}

struct live {
	uswap_entry_t e;
	unsigned int order;
};

static void test_alloc_never_hands_out_slot_twice(void **state)
{
	struct uswap *u = new_instance(state);
	const uint64_t nr_slots = 16 * USWAP_CLUSTER_SLOTS;
	int type = t_swapon(u, nr_slots, 0);
	uint8_t *map = calloc(nr_slots, 1);
	struct live *live = calloc(nr_slots, sizeof(*live));
	size_t nr_live = 0;
	uint64_t seed = t_env_seed(), rng = seed, inuse = 0;

	t_true(map != NULL && live != NULL);
	map[0] = 1; /* the header: never handed out */
	for (int op = 0; op < 200000; op++) {
		/* Bias toward allocation so the device runs full often. */
		bool do_alloc = nr_live == 0 || t_rand_below(&rng, 100) < 55;

		if (do_alloc) {
			unsigned int order = (unsigned int)t_rand_below(&rng, 5);
			uswap_entry_t e;
			int rc = uswap_alloc(u, order, &e);

			if (rc == -ENOSPC || (rc == -E2BIG && order > 0))
				continue;
			if (rc != 0)
				fail_msg("seed %llu: alloc order %u = %s",
					 (unsigned long long)seed, order,
					 t_errname(rc));
			assert_entry_sane(e, type, nr_slots, order);
			if (!map_take(map, uswap_entry_offset(e), SLOTS(order)))
				fail_msg("seed %llu: slot %llu (order %u) handed out twice",
					 (unsigned long long)seed,
					 (unsigned long long)uswap_entry_offset(e),
					 order);
			live[nr_live++] = (struct live){ e, order };
			inuse += SLOTS(order);
		} else {
			size_t i = t_rand_below(&rng, nr_live);
			struct live l = live[i];

			live[i] = live[--nr_live];
			memset(map + uswap_entry_offset(l.e), 0, SLOTS(l.order));
			t_put(u, l.e, l.order);
			inuse -= SLOTS(l.order);
		}
		if (op % 20000 == 0) {
			t_eq_u64(t_info(u, type).inuse, inuse);
			t_check(u);
		}
	}
	while (nr_live > 0) {
		nr_live--;
		t_put(u, live[nr_live].e, live[nr_live].order);
	}
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
	free(map);
	free(live);
}

/* Allocate order 0 until -ENOSPC; returns how many succeeded. */
static uint64_t fill_order0(struct uswap *u, uswap_entry_t *out, uint64_t max)
{
	uint64_t n = 0;
	int rc;

	for (;;) {
		uswap_entry_t e;

		rc = uswap_alloc(u, 0, &e);
		if (rc != 0)
			break;
		t_true(n < max);
		out[n++] = e;
	}
	t_eq(rc, -ENOSPC);
	return n;
}

static void test_every_freed_slot_is_handed_out_again(void **state)
{
	struct uswap *u = new_instance(state);
	const uint32_t nr_clusters = 8;
	int type = t_swapon(u, nr_clusters * USWAP_CLUSTER_SLOTS, 0);
	struct uswap_device_info info = t_info(u, type);
	uswap_entry_t *e = calloc(info.pages + 1, sizeof(*e));
	struct uswap_stats before, after;

	t_true(e != NULL);
	t_eq(info.nr_clusters, nr_clusters);
	t_eq_u64(info.pages, nr_clusters * USWAP_CLUSTER_SLOTS - 1);
	for (int round = 0; round < 2; round++) {
		before = t_stats(u);
		t_eq_u64(fill_order0(u, e, info.pages), info.pages);
		after = t_stats(u);
		/* The failing call above is the only -ENOSPC. */
		t_eq_u64(after.alloc_fail - before.alloc_fail, 1);
		t_eq_u64(t_info(u, type).inuse, info.pages);
		t_check(u);
		for (uint64_t i = 0; i < info.pages; i++)
			t_put(u, e[i], 0);
		t_eq_u64(t_info(u, type).inuse, 0);
		t_check(u);
	}
	/* Everything back: every cluster but the header's is free again. */
	t_eq(t_info(u, type).free_clusters, nr_clusters - 1);
	for (uint32_t c = 0; c < nr_clusters - 1; c++) {
		e[c] = t_alloc(u, USWAP_MAX_ORDER);
		t_eq_u64(uswap_entry_offset(e[c]) % USWAP_CLUSTER_SLOTS, 0);
		t_true(uswap_entry_offset(e[c]) != 0);
	}
	for (uint32_t c = 0; c < nr_clusters - 1; c++)
		t_put(u, e[c], USWAP_MAX_ORDER);
	t_check(u);
	free(e);
}

/*
 * Order 9 needs a wholly free cluster. Two equal-priority devices are
 * filled with order 0, then every odd slot is freed everywhere: lots of
 * free space, no free cluster. Each time one cluster is freed wholly (on
 * one device, then on its peer) an order-9 request must find it, whichever
 * device this CPU's ring reader points at (peer retry). The ring quota is
 * huge so the reader never moves on by quota: it stays on one device, and
 * one of the two rounds needs the peer. With none left the answer is
 * -E2BIG, counted exactly once in swpout_fallback[9].
 */
static void test_order9_succeeds_while_any_cluster_is_wholly_free(void **state)
{
	struct uswap *u = new_instance_quota(state, 1u << 30);
	const uint32_t nr_clusters = 8;
	const uint64_t nr_slots = nr_clusters * USWAP_CLUSTER_SLOTS;
	int types[2];
	uswap_entry_t *all = calloc(2 * nr_slots, sizeof(*all));
	uswap_entry_t *by_off[2];
	uint64_t n;

	t_true(all != NULL);
	types[0] = t_swapon(u, nr_slots, 3);
	types[1] = t_swapon(u, nr_slots, 3);
	n = fill_order0(u, all, 2 * nr_slots);
	t_eq_u64(n, 2 * (nr_slots - 1));

	/* Index the entries by (device, offset) to free chosen slots. */
	for (int d = 0; d < 2; d++) {
		by_off[d] = calloc(nr_slots, sizeof(uswap_entry_t));
		t_true(by_off[d] != NULL);
	}
	for (uint64_t i = 0; i < n; i++) {
		int d = uswap_entry_type(all[i]) == (unsigned int)types[0] ? 0 : 1;

		t_eq(uswap_entry_type(all[i]), types[d]);
		by_off[d][uswap_entry_offset(all[i])] = all[i];
	}
	for (int d = 0; d < 2; d++)
		for (uint64_t off = 1; off < nr_slots; off += 2) {
			t_put(u, by_off[d][off], 0);
			by_off[d][off].val = 0;
		}
	for (int d = 0; d < 2; d++)
		t_eq(t_info(u, types[d]).free_clusters, 0);
	t_check(u);

	/* One wholly free cluster: on device 1 first, then on device 0. */
	const uint32_t freed_cluster[2] = { 5, 3 };
	for (int k = 1; k >= 0; k--) {
		uint64_t start = freed_cluster[k] * USWAP_CLUSTER_SLOTS;
		struct uswap_stats before, after;
		uswap_entry_t e;

		for (uint64_t off = start; off < start + USWAP_CLUSTER_SLOTS; off += 2) {
			t_put(u, by_off[k][off], 0);
			by_off[k][off].val = 0;
		}
		before = t_stats(u);
		e = t_alloc(u, USWAP_MAX_ORDER);
		after = t_stats(u);
		t_eq(uswap_entry_type(e), types[k]);
		t_eq_u64(uswap_entry_offset(e), start);
		t_eq_u64(after.swpout[9] - before.swpout[9], 1);
		t_eq_u64(after.swpout_fallback[9] - before.swpout_fallback[9], 0);
		by_off[k][start] = e; /* freed below as an order-9 folio */
	}

	/* No wholly free cluster anywhere, yet plenty of free slots. */
	struct uswap_stats before = t_stats(u), after;
	uswap_entry_t e;
	int rc = uswap_alloc(u, USWAP_MAX_ORDER, &e);

	after = t_stats(u);
	t_eq(rc, -E2BIG);
	t_eq_u64(after.swpout_fallback[9] - before.swpout_fallback[9], 1);
	t_eq_u64(after.swpout[9] - before.swpout[9], 0);
	t_check(u);

	/* Drain: the two order-9 folios, then the remaining even slots. */
	for (int k = 0; k < 2; k++) {
		uint64_t start = freed_cluster[k] * USWAP_CLUSTER_SLOTS;

		t_put(u, by_off[k][start], USWAP_MAX_ORDER);
		by_off[k][start].val = 0;
	}
	for (int d = 0; d < 2; d++) {
		for (uint64_t off = 1; off < nr_slots; off++)
			if (by_off[d][off].val != 0)
				t_put(u, by_off[d][off], 0);
		t_eq_u64(t_info(u, types[d]).inuse, 0);
		free(by_off[d]);
	}
	t_check(u);
	free(all);
}

/*
 * Fill one 16-cluster device with order-4 folios, free every second one
 * (in allocation order, so each used cluster keeps half its runs), then
 * ask for as many order-4 folios again: the freed aligned runs in the
 * nonfull/frag clusters must be found, with no fallback.
 */
static void test_order4_reuses_freed_runs_without_fallback(void **state)
{
	struct uswap *u = new_instance(state);
	const uint32_t nr_clusters = 16;
	const unsigned int order = 4;
	int type = t_swapon(u, nr_clusters * USWAP_CLUSTER_SLOTS, 0);
	size_t cap = nr_clusters * USWAP_CLUSTER_SLOTS / SLOTS(order);
	uswap_entry_t *e = calloc(cap, sizeof(*e));
	struct uswap_stats before, after;
	size_t n = 0, nr_freed = 0;
	int rc;

	t_true(e != NULL);
	for (;;) {
		rc = uswap_alloc(u, order, &e[n]);
		if (rc != 0)
			break;
		t_true(n < cap);
		n++;
	}
	/* Cluster 0 keeps free slots next to the header: not "no space". */
	t_eq(rc, -E2BIG);
	/* At least every cluster but the header's served 32 runs. */
	t_true(n >= (nr_clusters - 1) * USWAP_CLUSTER_SLOTS / SLOTS(order));

	for (size_t i = 1; i < n; i += 2) {
		t_put(u, e[i], order);
		nr_freed++;
	}
	t_check(u);

	before = t_stats(u);
	for (size_t i = 0; i < nr_freed; i++) {
		uswap_entry_t got;

		rc = uswap_alloc(u, order, &got);
		if (rc != 0)
			fail_msg("order-4 allocation %zu of %zu after freeing half: %s",
				 i + 1, nr_freed, t_errname(rc));
		e[2 * i + 1] = got;
	}
	after = t_stats(u);
	t_eq_u64(after.swpout_fallback[order] - before.swpout_fallback[order], 0);
	t_eq_u64(after.swpout[order] - before.swpout[order], nr_freed);
	t_eq_u64(t_info(u, type).inuse, n * SLOTS(order));
	t_check(u);

	for (size_t i = 0; i < n; i++)
		t_put(u, e[i], order);
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
	free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_alloc_returns_naturally_aligned_pinned_run_for_every_order, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_alloc_never_hands_out_slot_twice, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_every_freed_slot_is_handed_out_again, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_order9_succeeds_while_any_cluster_is_wholly_free, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_order4_reuses_freed_runs_without_fallback, t_setup_cpu0, t_teardown_instance),
	};

	return t_run(tests);
}
