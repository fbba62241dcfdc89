/* SPDX-License-Identifier: MIT */
/*
 * Description: misuse of the public API on purpose. Every bad call must
 * return its documented negative errno and leave the instance as it was:
 * the same devices with the same counters (uswap_device_info), the same
 * allocation statistics, and a clean uswap_check(). Bad slots and the
 * header slot are never handed out.
 */
#include "t_util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static struct uswap *new_instance(void **state)
{
	struct uswap *u = t_create(2, 0);

	*state = u;
	return u;
}

static int swapon_args(struct uswap *u, uint64_t nr_slots, int prio,
		       unsigned int flags, const uint64_t *bad, size_t nr_bad)
{
	struct uswap_swapon_args args = {
		.name = "bad-input",
		.nr_slots = nr_slots,
		.prio = prio,
		.flags = flags,
		.bad_slots = bad,
		.nr_bad = nr_bad,
	};

	return uswap_swapon(u, &args);
}

/* ------------------------------------------------------------------
 * "State unchanged": everything a caller can observe, before and after
 * ------------------------------------------------------------------ */

struct snapshot {
	bool present[USWAP_MAX_DEVICES];
	struct uswap_device_info info[USWAP_MAX_DEVICES];
	struct uswap_stats st;
	int nr_listed;
};

static int count_listed(struct uswap *u)
{
	FILE *f = fopen("/dev/null", "w");
	int n;

	t_true(f != NULL);
	n = uswap_swaps(u, f);
	fclose(f);
	return n;
}

static void take(struct uswap *u, struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
	for (int type = 0; type < USWAP_MAX_DEVICES; type++)
		s->present[type] = uswap_device_info(u, type, &s->info[type]) == 0;
	s->st = t_stats(u);
	s->nr_listed = count_listed(u);
}

#define same_field(a, b, field, type)                                        \
	do {                                                                 \
		if ((a)->field != (b)->field)                                \
			fail_msg("type %d: %s changed from %llu to %llu",    \
				 type, #field,                               \
				 (unsigned long long)(a)->field,             \
				 (unsigned long long)(b)->field);            \
	} while (0)

static void assert_same_device(const struct uswap_device_info *a,
			       const struct uswap_device_info *b, int type)
{
	same_field(a, b, type, type);
	same_field(a, b, prio, type);
	same_field(a, b, size_kb, type);
	same_field(a, b, used_kb, type);
	same_field(a, b, nr_slots, type);
	same_field(a, b, pages, type);
	same_field(a, b, inuse, type);
	same_field(a, b, nr_clusters, type);
	same_field(a, b, free_clusters, type);
	same_field(a, b, nonfull_clusters, type);
	same_field(a, b, frag_clusters, type);
	same_field(a, b, full_clusters, type);
	same_field(a, b, percpu_clusters, type);
	same_field(a, b, metadata_bytes, type);
	if (strncmp(a->name, b->name, sizeof(a->name)) != 0)
		fail_msg("type %d: name changed from %.64s to %.64s", type,
			 a->name, b->name);
}

/*
 * Compare with a snapshot. The allocation counters must not move, except
 * bad_free by @bad_free_delta (-1: not checked). Lock counters and
 * list-scan counters are not state and may move.
 */
static void assert_unchanged(struct uswap *u, const struct snapshot *before,
			     long bad_free_delta)
{
	struct snapshot now;

	take(u, &now);
	t_eq(now.nr_listed, before->nr_listed);
	for (int type = 0; type < USWAP_MAX_DEVICES; type++) {
		if (now.present[type] != before->present[type])
			fail_msg("type %d %s", type, before->present[type] ?
				 "disappeared" : "appeared");
		if (now.present[type])
			assert_same_device(&before->info[type], &now.info[type], type);
	}
	for (int o = 0; o < USWAP_NR_ORDERS; o++) {
		t_eq_u64(now.st.swpout[o], before->st.swpout[o]);
		t_eq_u64(now.st.swpout_fallback[o], before->st.swpout_fallback[o]);
	}
	t_eq_u64(now.st.alloc_fast, before->st.alloc_fast);
	t_eq_u64(now.st.alloc_slow, before->st.alloc_slow);
	t_eq_u64(now.st.alloc_fail, before->st.alloc_fail);
	t_eq_u64(now.st.free_slots, before->st.free_slots);
	if (bad_free_delta >= 0)
		t_eq_u64(now.st.bad_free - before->st.bad_free, bad_free_delta);
	t_check(u);
}

/* A device with a few slots in use, so "unchanged" has something to see. */
static int busy_device(struct uswap *u, uswap_entry_t *held, int nr)
{
	int type = t_swapon(u, 4 * USWAP_CLUSTER_SLOTS, 1);

	for (int i = 0; i < nr; i++)
		held[i] = t_alloc(u, (unsigned int)i % 3);
	return type;
}

/* ------------------------------------------------------------------ */

static void test_swapon_rejects_device_smaller_than_two_clusters(void **state)
{
	struct uswap *u = new_instance(state);
	uswap_entry_t held[4];
	struct snapshot s;

	busy_device(u, held, 4);
	take(u, &s);
	t_eq(swapon_args(u, USWAP_MIN_CLUSTERS * USWAP_CLUSTER_SLOTS - 1, 0, 0, NULL, 0),
	     -EINVAL);
	t_eq(swapon_args(u, 1, 0, 0, NULL, 0), -EINVAL);
	t_eq(swapon_args(u, 0, 0, 0, NULL, 0), -EINVAL);
	/* Past the 32-bit limit of the header's last_page. */
	t_eq(swapon_args(u, (uint64_t)UINT32_MAX + 1, 0, 0, NULL, 0), -EINVAL);
	assert_unchanged(u, &s, 0);

	/* Exactly two clusters is the smallest accepted device. */
	int type = swapon_args(u, USWAP_MIN_CLUSTERS * USWAP_CLUSTER_SLOTS, 0, 0, NULL, 0);
	t_true(type >= 0);
	t_eq(t_info(u, type).nr_clusters, USWAP_MIN_CLUSTERS);
}

static void test_swapon_rejects_priority_flags_and_bad_slots_out_of_range(void **state)
{
	struct uswap *u = new_instance(state);
	const uint64_t nr = 4 * USWAP_CLUSTER_SLOTS;
	const uint64_t slot0[] = { 0 }, past_end[] = { nr }, ok_then_past[] = { 7, nr + 100 };
	uswap_entry_t held[4];
	struct snapshot s;

	busy_device(u, held, 4);
	take(u, &s);
	t_eq(swapon_args(u, nr, -2, 0, NULL, 0), -EINVAL);
	t_eq(swapon_args(u, nr, USWAP_PRIO_MAX + 1, 0, NULL, 0), -EINVAL);
	t_eq(swapon_args(u, nr, INT_MIN, 0, NULL, 0), -EINVAL);
	t_eq(swapon_args(u, nr, INT_MAX, 0, NULL, 0), -EINVAL);
	t_eq(swapon_args(u, nr, 0, 1 /* reserved flag */, NULL, 0), -EINVAL);
	t_eq(swapon_args(u, nr, 0, 0, slot0, 1), -EINVAL);
	t_eq(swapon_args(u, nr, 0, 0, past_end, 1), -EINVAL);
	t_eq(swapon_args(u, nr, 0, 0, ok_then_past, 2), -EINVAL);
	assert_unchanged(u, &s, 0);

	/* The ends of the range are accepted and reported as given. */
	int lo = swapon_args(u, nr, USWAP_PRIO_DEFAULT, 0, NULL, 0);
	int zero = swapon_args(u, nr, 0, 0, NULL, 0);
	int hi = swapon_args(u, nr, USWAP_PRIO_MAX, 0, NULL, 0);

	t_true(lo >= 0 && zero >= 0 && hi >= 0);
	t_eq(t_info(u, lo).prio, USWAP_PRIO_DEFAULT);
	t_eq(t_info(u, zero).prio, 0);
	t_eq(t_info(u, hi).prio, USWAP_PRIO_MAX);
	t_check(u);
}

static void test_swapon_of_device_with_every_slot_bad_gets_enospc(void **state)
{
	struct uswap *u = new_instance(state);
	const uint64_t nr = USWAP_MIN_CLUSTERS * USWAP_CLUSTER_SLOTS;
	uint64_t *bad = malloc((nr - 1) * sizeof(*bad));
	uswap_entry_t held[4];
	struct snapshot s;

	t_true(bad != NULL);
	for (uint64_t i = 0; i < nr - 1; i++)
		bad[i] = i + 1;
	busy_device(u, held, 4);
	take(u, &s);
	t_eq(swapon_args(u, nr, 0, 0, bad, nr - 1), -ENOSPC);
	assert_unchanged(u, &s, 0);
	free(bad);
}

static void test_swapon_of_33rd_device_gets_emfile(void **state)
{
	struct uswap *u = new_instance(state);
	const uint64_t nr = USWAP_MIN_CLUSTERS * USWAP_CLUSTER_SLOTS;
	bool seen[USWAP_MAX_DEVICES] = { false };
	struct snapshot s;
	uswap_entry_t e;

	for (int i = 0; i < USWAP_MAX_DEVICES; i++) {
		int type = t_swapon(u, nr, i % 2 ? 3 : USWAP_PRIO_DEFAULT);

		t_true(!seen[type]);
		seen[type] = true;
	}
	e = t_alloc(u, 0);
	take(u, &s);
	t_eq(s.nr_listed, USWAP_MAX_DEVICES);
	t_eq(swapon_args(u, nr, 0, 0, NULL, 0), -EMFILE);
	t_eq(swapon_args(u, nr, 7, 0, NULL, 0), -EMFILE);
	assert_unchanged(u, &s, 0);

	/* A type given back can be taken again. */
	int victim = uswap_entry_type(e) == 5 ? 6 : 5;
	t_eq(uswap_swapoff(u, victim), 0);
	t_eq(t_swapon(u, nr, 0), victim);
	t_put(u, e, 0);
	t_check(u);
}

static void test_swapoff_of_unknown_type_gets_enoent(void **state)
{
	struct uswap *u = new_instance(state);
	uswap_entry_t held[4];
	struct snapshot s;
	struct uswap_device_info info;
	int type = busy_device(u, held, 4);
	int gone = t_swapon(u, 2 * USWAP_CLUSTER_SLOTS, 0);

	t_eq(uswap_swapoff(u, gone), 0);
	take(u, &s);
	t_eq(uswap_swapoff(u, gone), -ENOENT);
	t_eq(uswap_swapoff(u, type + 5), -ENOENT);
	t_eq(uswap_swapoff(u, -1), -ENOENT);
	t_eq(uswap_swapoff(u, USWAP_MAX_DEVICES), -ENOENT);
	t_eq(uswap_device_info(u, gone, &info), -ENOENT);
	t_eq(uswap_device_info(u, USWAP_MAX_DEVICES, &info), -ENOENT);
	assert_unchanged(u, &s, 0);
}

static void test_swapoff_of_busy_device_gets_ebusy_and_device_keeps_working(void **state)
{
	struct uswap *u = new_instance(state);
	uswap_entry_t held[6], more[3];
	struct snapshot s;
	bool cache;
	int type = busy_device(u, held, 6);

	/* One slot is held only by a reference, not by the cache. */
	t_eq(uswap_dup(u, held[0]), 0);
	t_put(u, held[0], 0);

	take(u, &s);
	t_eq(uswap_swapoff(u, type), -EBUSY);
	t_eq(uswap_swapoff(u, type), -EBUSY);
	/* "Put back exactly as it was". */
	assert_unchanged(u, &s, 0);
	t_eq(uswap_slot_count(u, held[0], &cache), 1);
	t_true(!cache);

	/* Still in its ring: the only device serves new allocations... */
	for (int i = 0; i < 3; i++) {
		more[i] = t_alloc(u, (unsigned int)i);
		t_eq(uswap_entry_type(more[i]), type);
	}
	/* ...and takes every slot back. */
	for (int i = 0; i < 3; i++)
		t_put(u, more[i], (unsigned int)i);
	t_eq(uswap_free(u, held[0], 1), 0);
	for (int i = 1; i < 6; i++)
		t_put(u, held[i], (unsigned int)i % 3);
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
	t_eq(uswap_swapoff(u, type), 0);
	t_eq(count_listed(u), 0);
}

/* ------------------------------------------------------------------ */

static void test_free_of_slot_not_in_use_gets_enoent_and_counts_bad_free(void **state)
{
	struct uswap *u = new_instance(state);
	uswap_entry_t held[4];
	struct snapshot s;
	bool cache;
	int type = busy_device(u, held, 4);
	uswap_entry_t pinned = t_alloc(u, 0);       /* pin, count 0 */
	uswap_entry_t counted = t_alloc(u, 0);      /* count 2, no pin */
	uswap_entry_t nowhere = uswap_entry(type, 4 * USWAP_CLUSTER_SLOTS - 1);

	t_eq(uswap_dup(u, counted), 0);
	t_eq(uswap_dup(u, counted), 0);
	t_put(u, counted, 0);
	/* The last slot of the device is free (nothing allocated near it). */
	t_eq(uswap_slot_count(u, nowhere, &cache), -ENOENT);

	take(u, &s);
	t_eq(uswap_free(u, nowhere, 1), -ENOENT);
	assert_unchanged(u, &s, 1);
	t_eq(uswap_put_folio(u, nowhere, 0), -ENOENT);
	assert_unchanged(u, &s, 2);
	/* A pinned slot with no reference has nothing to free. */
	t_eq(uswap_free(u, pinned, 1), -ENOENT);
	assert_unchanged(u, &s, 3);
	/* A referenced slot without the pin has no pin to drop. */
	t_eq(uswap_put_folio(u, counted, 0), -ENOENT);
	assert_unchanged(u, &s, 4);

	/* The slots around were not touched. */
	t_eq(uswap_slot_count(u, pinned, &cache), 0);
	t_true(cache);
	t_eq(uswap_slot_count(u, counted, &cache), 2);
	t_true(!cache);

	/* A double put: the second finds no pin. */
	t_put(u, pinned, 0);
	take(u, &s);
	t_eq(uswap_put_folio(u, pinned, 0), -ENOENT);
	assert_unchanged(u, &s, 1);
}

/* put_folio of an order-1 folio whose second slot is already free. */
static void test_put_folio_with_one_slot_not_pinned_changes_nothing(void **state)
{
	struct uswap *u = new_instance(state);
	int type = t_swapon(u, 4 * USWAP_CLUSTER_SLOTS, 0);
	uswap_entry_t folio = t_alloc(u, 1);
	uswap_entry_t second = uswap_entry(type, uswap_entry_offset(folio) + 1);
	struct snapshot s;
	bool cache;

	t_put(u, second, 0);
	take(u, &s);
	t_eq(uswap_put_folio(u, folio, 1), -ENOENT);
	assert_unchanged(u, &s, 1);
	t_eq(uswap_slot_count(u, folio, &cache), 0);
	t_true(cache);
	t_put(u, folio, 0);
	t_eq_u64(t_info(u, type).inuse, 0);
}

static void test_dup_past_count_max_gets_eoverflow_and_count_round_trips(void **state)
{
	struct uswap *u = new_instance(state);
	int type = t_swapon(u, 4 * USWAP_CLUSTER_SLOTS, 0);
	uswap_entry_t e = t_alloc(u, 0);
	struct snapshot s;
	bool cache;

	for (unsigned long i = 0; i < USWAP_COUNT_MAX; i++) {
		int rc = uswap_dup(u, e);

		if (rc != 0)
			fail_msg("dup %lu of %u: %s", i + 1, USWAP_COUNT_MAX,
				 t_errname(rc));
	}
	t_eq(uswap_slot_count(u, e, &cache), USWAP_COUNT_MAX);
	take(u, &s);
	t_eq(uswap_dup(u, e), -EOVERFLOW);
	t_eq(uswap_dup(u, e), -EOVERFLOW);
	assert_unchanged(u, &s, 0);
	t_eq(uswap_slot_count(u, e, &cache), USWAP_COUNT_MAX);
	t_true(cache);

	for (unsigned long i = 0; i < USWAP_COUNT_MAX; i++)
		t_eq(uswap_free(u, e, 1), 0);
	t_eq(uswap_slot_count(u, e, &cache), 0);
	t_true(cache);
	t_put(u, e, 0);
	t_eq(uswap_slot_count(u, e, &cache), -ENOENT);
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
}

/* ------------------------------------------------------------------ */

static bool is_bad(const uint64_t *bad, size_t nr_bad, uint64_t off)
{
	for (size_t i = 0; i < nr_bad; i++)
		if (bad[i] == off)
			return true;
	return false;
}

/*
 * Fill a device that has bad slots (scattered, at cluster edges and one
 * whole cluster) first with order-2 folios, then with order 0 until
 * -ENOSPC: exactly the usable slots come out, none of them bad or 0.
 */
static void test_bad_slots_and_slot_0_are_never_handed_out(void **state)
{
	struct uswap *u = new_instance(state);
	const uint64_t nr_slots = 8 * USWAP_CLUSTER_SLOTS;
	uint64_t bad[16 + USWAP_CLUSTER_SLOTS];
	size_t nr_bad = 0;
	uswap_entry_t *got = calloc(nr_slots, sizeof(*got));
	unsigned int *order_of = calloc(nr_slots, sizeof(*order_of));
	uint64_t used = 0, nr_got = 0;
	bool cache;

	t_true(got != NULL && order_of != NULL);
	const uint64_t scattered[] = { 1, 2, 511, 512, 1000, 1023, 1536, nr_slots - 1 };
	for (size_t i = 0; i < T_ARRAY_SIZE(scattered); i++)
		bad[nr_bad++] = scattered[i];
	for (uint64_t off = 4 * USWAP_CLUSTER_SLOTS; off < 5 * USWAP_CLUSTER_SLOTS; off++)
		bad[nr_bad++] = off; /* cluster 4 wholly bad */

	int type = t_swapon_bad(u, nr_slots, 0, bad, nr_bad);
	struct uswap_device_info info = t_info(u, type);

	t_eq_u64(info.pages, nr_slots - 1 - nr_bad);
	t_eq_u64(info.inuse, 0);
	for (unsigned int pass = 0; pass < 2; pass++) {
		unsigned int order = pass == 0 ? 2 : 0;
		uswap_entry_t e;
		int rc;

		while ((rc = uswap_alloc(u, order, &e)) == 0) {
			uint64_t off = uswap_entry_offset(e);

			t_eq(uswap_entry_type(e), type);
			t_true(off != 0);
			for (uint64_t i = 0; i < (1u << order); i++)
				if (is_bad(bad, nr_bad, off + i))
					fail_msg("bad slot %llu handed out (order %u)",
						 (unsigned long long)(off + i), order);
			t_true(nr_got < nr_slots);
			order_of[nr_got] = order;
			got[nr_got++] = e;
			used += 1u << order;
		}
		t_eq(rc, order ? -E2BIG : -ENOSPC);
	}
	t_eq_u64(used, info.pages);
	t_eq_u64(t_info(u, type).inuse, info.pages);
	t_check(u);

	/* Bad slots and the header read back as BAD and refuse every use. */
	const uint64_t probe[] = { 0, 1, 512, 4 * USWAP_CLUSTER_SLOTS + 17, nr_slots - 1 };
	struct snapshot s;

	take(u, &s);
	for (size_t i = 0; i < T_ARRAY_SIZE(probe); i++) {
		uswap_entry_t e = uswap_entry(type, probe[i]);
		/* Slot 0 may also be refused as a malformed entry. */
		int other = probe[i] == 0 ? -EINVAL : INT_MIN;

		t_eq_either(uswap_slot_count(u, e, &cache), -EIO, other);
		t_eq_either(uswap_dup(u, e), -ENOENT, other);
		t_eq_either(uswap_cache_pin(u, e), -ENOENT, other);
		t_eq_either(uswap_free(u, e, 1), -ENOENT, other);
		t_eq_either(uswap_put_folio(u, e, 0), -ENOENT, other);
		t_eq_either(uswap_slot_count(u, e, &cache), -EIO, other);
	}
	assert_unchanged(u, &s, -1);

	for (uint64_t i = 0; i < nr_got; i++)
		t_put(u, got[i], order_of[i]);
	info = t_info(u, type);
	t_eq_u64(info.inuse, 0);
	/* Never wholly free: cluster 0 (header; bad 1, 2, 511), 1 (512,
	 * 1000, 1023), 3 (1536), 4 (all bad), 7 (the last slot). The other
	 * three, 2, 5 and 6, are free again. */
	t_eq(info.free_clusters, 3);
	t_check(u);
	free(got);
	free(order_of);
}

static void test_slot_0_is_never_handed_out(void **state)
{
	struct uswap *u = new_instance(state);
	const uint64_t nr_slots = 4 * USWAP_CLUSTER_SLOTS;
	int type = t_swapon(u, nr_slots, 0);
	uswap_entry_t *got = calloc(nr_slots, sizeof(*got));
	uint64_t n = 0;
	uswap_entry_t e;
	bool cache;

	t_true(got != NULL);
	t_eq_either(uswap_slot_count(u, uswap_entry(type, 0), &cache), -EIO, -EINVAL);
	while (uswap_alloc(u, 0, &e) == 0) {
		t_true(e.val != 0 && uswap_entry_offset(e) != 0);
		t_true(n < nr_slots - 1);
		got[n++] = e;
	}
	t_eq_u64(n, nr_slots - 1);
	for (uint64_t i = 0; i < n; i++)
		t_put(u, got[i], 0);

	/* Order 9 never takes cluster 0: only the other three are served. */
	n = 0;
	while (uswap_alloc(u, USWAP_MAX_ORDER, &e) == 0) {
		t_true(uswap_entry_offset(e) >= USWAP_CLUSTER_SLOTS);
		t_true(n < 3);
		got[n++] = e;
	}
	t_eq_u64(n, 3);
	for (uint64_t i = 0; i < n; i++)
		t_put(u, got[i], USWAP_MAX_ORDER);
	t_eq_either(uswap_slot_count(u, uswap_entry(type, 0), &cache), -EIO, -EINVAL);
	t_check(u);
	free(got);
}

/* ------------------------------------------------------------------ */

static void test_order_above_9_gets_einval(void **state)
{
	struct uswap *u = new_instance(state);
	uswap_entry_t held[4], e = { 0 };
	struct snapshot s;

	busy_device(u, held, 4);
	take(u, &s);
	t_eq(uswap_alloc(u, USWAP_NR_ORDERS, &e), -EINVAL);
	t_eq(uswap_alloc(u, UINT_MAX, &e), -EINVAL);
	t_eq(uswap_put_folio(u, held[0], USWAP_NR_ORDERS), -EINVAL);
	assert_unchanged(u, &s, -1);
}

static void test_malformed_entries_get_einval(void **state)
{
	struct uswap *u = new_instance(state);
	uswap_entry_t held[4];
	struct snapshot s;
	bool cache;
	int type = busy_device(u, held, 4);
	uint64_t nr_slots = t_info(u, type).nr_slots;
	uswap_entry_t no_device = uswap_entry(type + 1, 10);
	uswap_entry_t past_end = uswap_entry(type, nr_slots);
	uswap_entry_t folio = t_alloc(u, 1);
	uswap_entry_t odd = uswap_entry(type, uswap_entry_offset(folio) + 1);
	uswap_entry_t edge = uswap_entry(type, USWAP_CLUSTER_SLOTS - 1);

	take(u, &s);
	/* Neither a type that is not swapped on nor an offset past the end. */
	t_eq(uswap_dup(u, no_device), -EINVAL);
	t_eq(uswap_free(u, no_device, 1), -EINVAL);
	t_eq(uswap_cache_pin(u, no_device), -EINVAL);
	t_eq(uswap_put_folio(u, no_device, 0), -EINVAL);
	t_eq(uswap_slot_count(u, no_device, &cache), -EINVAL);
	t_eq(uswap_dup(u, past_end), -EINVAL);
	t_eq(uswap_free(u, past_end, 1), -EINVAL);
	t_eq(uswap_cache_pin(u, past_end), -EINVAL);
	t_eq(uswap_put_folio(u, past_end, 0), -EINVAL);
	t_eq(uswap_slot_count(u, past_end, &cache), -EINVAL);
	/* A folio put must be aligned to its order. */
	t_eq(uswap_put_folio(u, odd, 1), -EINVAL);
	/* uswap_free: nr 0, or a range crossing a cluster boundary. */
	t_eq(uswap_free(u, held[0], 0), -EINVAL);
	t_eq(uswap_free(u, edge, 2), -EINVAL);
	assert_unchanged(u, &s, -1);
	t_put(u, folio, 1);
}

/* Found by an outside tester (item 6 of the reliability report): an entry of a live slot with bit 63 set
 * (outside the type and offset bits) was taken for that slot by every
 * call. Each must refuse it and change nothing. */
static void test_entry_with_bit_63_set_gets_einval_and_changes_nothing(void **state)
{
	struct uswap *u = new_instance(state);
	uswap_entry_t held[4];
	struct snapshot s;
	char page[USWAP_PAGE_SIZE];
	bool cache;
	uswap_entry_t live, garbage;

	busy_device(u, held, 4);
	live = held[0]; /* pinned by the allocation; one reference more: */
	t_eq(uswap_dup(u, live), 0);
	garbage.val = live.val | (UINT64_C(1) << 63);
	t_eq(uswap_entry_type(garbage), uswap_entry_type(live)); /* looks alike */
	t_eq_u64(uswap_entry_offset(garbage), uswap_entry_offset(live));
	t_true(!uswap_entry_valid_bits(garbage));
	t_true(uswap_entry_valid_bits(live));
	take(u, &s);
	t_eq(uswap_free(u, garbage, 1), -EINVAL);
	t_eq(uswap_dup(u, garbage), -EINVAL);
	t_eq(uswap_cache_pin(u, garbage), -EINVAL);
	t_eq(uswap_put_folio(u, garbage, 0), -EINVAL);
	t_eq(uswap_slot_count(u, garbage, &cache), -EINVAL);
	t_eq(uswap_swap_in(u, garbage, 0, page), -EINVAL);
	t_eq(uswap_swap_free(u, garbage, 0), -EINVAL);
	t_eq(uswap_cache_drop(u, garbage, 0), -EINVAL);
	assert_unchanged(u, &s, 0);
	t_eq(uswap_slot_count(u, live, &cache), 1);
	t_true(cache);
}

static void test_create_rejects_more_than_max_cpus(void **state)
{
	struct uswap_config cfg = { .nr_cpus = USWAP_MAX_CPUS + 1 };
	struct uswap *u = NULL;
	int rc = uswap_create(&cfg, &u);

	*state = NULL;
	t_eq(rc, -EINVAL);
	t_true(u == NULL);
	cfg.nr_cpus = USWAP_MAX_CPUS;
	t_eq(uswap_create(&cfg, &u), 0);
	*state = u;
}

/* An older, smaller stats struct is filled up to its size, no further. */
static void test_stats_get_respects_the_callers_size(void **state)
{
	struct uswap *u = new_instance(state);
	struct uswap_stats st;
	const size_t small = offsetof(struct uswap_stats, swpout_fallback);
	unsigned char tail[sizeof(st)];

	t_swapon(u, 4 * USWAP_CLUSTER_SLOTS, 0);
	t_put(u, t_alloc(u, 2), 2);

	memset(&st, 0xab, sizeof(st));
	st.size = 4;
	t_eq(uswap_stats_get(u, &st), -EINVAL);
	st.size = 0;
	t_eq(uswap_stats_get(u, &st), -EINVAL);

	memset(&st, 0xab, sizeof(st));
	memset(tail, 0xab, sizeof(tail));
	st.size = (uint32_t)small;
	t_eq(uswap_stats_get(u, &st), 0);
	t_eq(st.version, USWAP_STATS_VERSION);
	t_eq_u64(st.swpout[2], 1);
	if (memcmp((unsigned char *)&st + small, tail, sizeof(st) - small) != 0)
		fail_msg("uswap_stats_get wrote past the caller's size %zu", small);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_swapon_rejects_device_smaller_than_two_clusters, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_swapon_rejects_priority_flags_and_bad_slots_out_of_range, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_swapon_of_device_with_every_slot_bad_gets_enospc, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_swapon_of_33rd_device_gets_emfile, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_swapoff_of_unknown_type_gets_enoent, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_swapoff_of_busy_device_gets_ebusy_and_device_keeps_working, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_free_of_slot_not_in_use_gets_enoent_and_counts_bad_free, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_put_folio_with_one_slot_not_pinned_changes_nothing, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_dup_past_count_max_gets_eoverflow_and_count_round_trips, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_bad_slots_and_slot_0_are_never_handed_out, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_slot_0_is_never_handed_out, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_order_above_9_gets_einval, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_malformed_entries_get_einval, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_entry_with_bit_63_set_gets_einval_and_changes_nothing, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_create_rejects_more_than_max_cpus, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_stats_get_respects_the_callers_size, t_setup_cpu0, t_teardown_instance),
	};

	return t_run(tests);
}
