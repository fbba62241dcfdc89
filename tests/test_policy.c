/* SPDX-License-Identifier: MIT */
/*
 * Description: each allocator policy switch (struct uswap_policy,
 * src/alloc/alloc_policy.h) does what it says, checked on counters and device
 * use, never on times: legacy priorities fill default devices one after
 * another and prefer a node's own devices; the global rotation and the
 * rings spread equal priorities evenly; scan-one touches one frag cluster
 * per attempt where scan-all walks them all; free-first and nonfull-first
 * pick different clusters; the interleaved free list hands out fresh
 * clusters 32 apart; the device lock is taken on every allocation; the
 * global per-CPU cursor keeps a CPU on one device; a synchronous discard
 * empties the whole discard list at once. Many CPUs are emulated with
 * uswap_thread_set_cpu().
 */
#include "t_util.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define CL USWAP_CLUSTER_SLOTS

/* An instance with @p on @nr_cpus CPUs (ring quota: library default). */
static struct uswap *new_policy(void **state, const struct uswap_policy *p,
				unsigned int nr_cpus)
{
	struct uswap_config cfg = { .nr_cpus = nr_cpus, .policy = *p };
	struct uswap *u = NULL;

	t_eq(uswap_create(&cfg, &u), 0);
	*state = u;
	return u;
}

static int swapon_node(struct uswap *u, uint64_t nr_slots, int prio, int node,
		       unsigned int flags)
{
	struct uswap_swapon_args a = {
		.nr_slots = nr_slots, .prio = prio, .node = node, .flags = flags,
	};
	int type = uswap_swapon(u, &a);

	t_true(type >= 0);
	return type;
}

/* Live entries, freed in one go. */
struct held {
	uswap_entry_t e[8192];
	unsigned int order[8192];
	size_t nr;
};

static void hold(struct held *h, uswap_entry_t e, unsigned int order)
{
	t_true(h->nr < T_ARRAY_SIZE(h->e));
	h->e[h->nr] = e;
	h->order[h->nr++] = order;
}

static void put_all(struct uswap *u, struct held *h)
{
	for (size_t i = 0; i < h->nr; i++)
		t_put(u, h->e[i], h->order[i]);
	h->nr = 0;
}

static struct held *held_new(void)
{
	struct held *h = calloc(1, sizeof(*h));

	t_true(h != NULL);
	return h;
}

/* max/min of the in-use counts of @types (min 0 gives a huge ratio). */
static double use_ratio(struct uswap *u, const int *types, int n)
{
	uint64_t max = 0, min = UINT64_MAX;

	for (int i = 0; i < n; i++) {
		uint64_t v = t_info(u, types[i]).inuse;

		max = v > max ? v : max;
		min = v < min ? v : min;
	}
	return min ? (double)max / (double)min : 1e9;
}

/* ------------------------------------------------------------------
 * select
 * ------------------------------------------------------------------ */

/* Seed 4 "before": default devices numbered -2, -3, -4; the second gets
 * nothing until the first is full, on any CPU. */
static void test_legacy_prio_fills_default_devices_one_after_another(void **state)
{
	const struct uswap_policy p = { .select = USWAP_SELECT_LEGACY_PRIO };
	struct uswap *u = new_policy(state, &p, 8);
	int t[3];
	struct held *h = held_new();
	uint64_t pages0;

	for (int i = 0; i < 3; i++)
		t[i] = t_swapon(u, 4 * CL, USWAP_PRIO_DEFAULT);
	t_eq(t_info(u, t[0]).prio, -2);
	t_eq(t_info(u, t[1]).prio, -3);
	t_eq(t_info(u, t[2]).prio, -4);
	pages0 = t_info(u, t[0]).pages;
	for (uint64_t i = 0; i < pages0; i++) {
		uswap_thread_set_cpu((int)(i % 8));
		uswap_entry_t e = t_alloc(u, 0);

		if (uswap_entry_type(e) != (unsigned int)t[0])
			fail_msg("allocation %llu of %llu went to type %u before "
				 "the -2 device was full", (unsigned long long)i,
				 (unsigned long long)pages0, uswap_entry_type(e));
		hold(h, e, 0);
	}
	t_eq(t_info(u, t[1]).inuse, 0);
	t_eq(t_info(u, t[2]).inuse, 0);
	hold(h, t_alloc(u, 0), 0);
	t_eq(t_info(u, t[1]).inuse, 1);
	t_true(use_ratio(u, t, 3) > 100); /* far from even: that is the point */
	t_check(u);
	put_all(u, h);
	free(h);
}

/* swapoff of an auto-numbered device moves the later ones up by one, and
 * the next swapon continues from the new end (least_priority). */
static void test_legacy_prio_swapoff_renumbers_later_devices(void **state)
{
	const struct uswap_policy p = { .select = USWAP_SELECT_LEGACY_PRIO };
	struct uswap *u = new_policy(state, &p, 2);
	int t0 = t_swapon(u, 4 * CL, USWAP_PRIO_DEFAULT);
	int t1 = t_swapon(u, 4 * CL, USWAP_PRIO_DEFAULT);
	int t5 = t_swapon(u, 4 * CL, 5);
	int t2 = t_swapon(u, 4 * CL, USWAP_PRIO_DEFAULT);

	t_eq(t_info(u, t2).prio, -4);
	t_eq(uswap_swapoff(u, t0), 0);
	t_eq(t_info(u, t1).prio, -2);
	t_eq(t_info(u, t2).prio, -3);
	t_eq(t_info(u, t5).prio, 5); /* explicit priorities never move */
	t_eq(t_info(u, t_swapon(u, 4 * CL, USWAP_PRIO_DEFAULT)).prio, -4);
	t_check(u);
}

/* Per-node lists: on node 1 (CPUs 2, 3) the node's own two devices rank -1
 * and share round robin; node 0's device gets nothing from them. */
static void test_legacy_prio_nodes_prefer_their_own_devices(void **state)
{
	const struct uswap_policy p = {
		.select = USWAP_SELECT_LEGACY_PRIO, .nr_nodes = 2,
	};
	struct uswap *u = new_policy(state, &p, 4);
	int a = swapon_node(u, 8 * CL, USWAP_PRIO_DEFAULT, 0, 0);
	int b = swapon_node(u, 8 * CL, USWAP_PRIO_DEFAULT, 1, 0);
	int c = swapon_node(u, 8 * CL, USWAP_PRIO_DEFAULT, 1, 0);
	int bc[2] = { b, c };
	struct held *h = held_new();

	t_eq(t_info(u, c).node, 1);
	for (int i = 0; i < 2048; i++) {
		unsigned int order = i % 5 ? 0 : 2; /* both CPUs, both devices */

		uswap_thread_set_cpu(2 + i % 2);
		hold(h, t_alloc(u, order), order);
	}
	t_eq(t_info(u, a).inuse, 0);
	if (use_ratio(u, bc, 2) > 1.5)
		fail_msg("node 1's devices used %llu and %llu: not round robin",
			 (unsigned long long)t_info(u, b).inuse,
			 (unsigned long long)t_info(u, c).inuse);
	/* Node 0 (CPU 0) prefers its own device. */
	uswap_thread_set_cpu(0);
	uswap_entry_t e = t_alloc(u, 0);

	t_eq(uswap_entry_type(e), a);
	hold(h, e, 0);
	t_check(u);
	put_all(u, h);
	free(h);
}

/* Seed 4 "after" and seed 5 "after": equal priorities fill evenly, by the
 * global rotation and by the per-CPU ring readers alike. */
static void fill_evenly(void **state, enum uswap_select_policy select)
{
	const struct uswap_policy p = { .select = select };
	struct uswap *u = new_policy(state, &p, 8);
	struct held *h = held_new();
	int t[4];
	double ratio;

	for (int i = 0; i < 4; i++)
		t[i] = t_swapon(u, 16 * CL, USWAP_PRIO_DEFAULT);
	for (int i = 0; i < 8000; i++) {
		/* Every 5th is order 2: 5 and 4 devices are coprime, so a
		 * shared rotation cannot hand them all to the same device. */
		unsigned int order = i % 5 ? 0 : 2;

		uswap_thread_set_cpu(i % 8);
		hold(h, t_alloc(u, order), order);
	}
	ratio = use_ratio(u, t, 4);
	printf("# select %d: used max/min %.3f\n", select, ratio);
	if (ratio > 1.25)
		fail_msg("select %d: equal-priority devices used max/min %.3f", select,
			 ratio);
	t_check(u);
	put_all(u, h);
	free(h);
}

static void test_global_rotate_fills_equal_priority_devices_evenly(void **state)
{
	fill_evenly(state, USWAP_SELECT_GLOBAL_ROTATE);
}

static void test_rings_fill_equal_priority_devices_evenly(void **state)
{
	fill_evenly(state, USWAP_SELECT_RINGS);
}

/* With per-device cursors the rotated list is walked, under the global
 * lock, on every allocation; the rings never take a shared lock to choose. */
static void test_global_rotate_takes_global_lock_per_allocation(void **state)
{
	const struct uswap_policy rot = { .select = USWAP_SELECT_GLOBAL_ROTATE };
	const struct uswap_policy rings = { 0 };
	const struct uswap_policy *pols[2] = { &rot, &rings };
	uint64_t global[2];

	for (int k = 0; k < 2; k++) {
		struct uswap *u = new_policy(state, pols[k], 4);
		struct uswap_stats before, after;

		for (int i = 0; i < 2; i++)
			t_swapon(u, 8 * CL, USWAP_PRIO_DEFAULT);
		before = t_stats(u);
		for (int i = 0; i < 1000; i++) {
			uswap_thread_set_cpu(i % 4);
			t_put(u, t_alloc(u, 0), 0);
		}
		after = t_stats(u);
		global[k] = after.locks[USWAP_LOCK_GLOBAL].acquired -
			    before.locks[USWAP_LOCK_GLOBAL].acquired;
		if (k == 0)
			t_eq_u64(after.avail_requeue - before.avail_requeue, 1000);
		uswap_destroy(u);
		*state = NULL;
	}
	t_true(global[0] >= 1000);
	t_eq_u64(global[1], 0);
}

/* A full device leaves the global list and comes back on its first free. */
static void test_global_rotate_readds_full_device_on_first_free(void **state)
{
	const struct uswap_policy p = { .select = USWAP_SELECT_GLOBAL_ROTATE };
	struct uswap *u = new_policy(state, &p, 2);
	int t0 = t_swapon(u, 2 * CL, USWAP_PRIO_DEFAULT);
	int t1 = t_swapon(u, 2 * CL, USWAP_PRIO_DEFAULT);
	uint64_t total = t_info(u, t0).pages + t_info(u, t1).pages;
	struct held *h = held_new();
	uswap_entry_t e;

	for (uint64_t i = 0; i < total; i++)
		hold(h, t_alloc(u, 0), 0);
	t_eq(uswap_alloc(u, 0, &e), -ENOSPC);
	t_check(u); /* both off the list */
	for (size_t i = 0; i < h->nr; i++) {
		if (uswap_entry_type(h->e[i]) != (unsigned int)t0)
			continue;
		t_put(u, h->e[i], 0);
		h->e[i] = h->e[--h->nr];
		break;
	}
	t_check(u); /* t0 back on it */
	e = t_alloc(u, 0);
	t_eq(uswap_entry_type(e), t0);
	hold(h, e, 0);
	put_all(u, h);
	free(h);
}

/* ------------------------------------------------------------------
 * frag, cluster, freelist
 * ------------------------------------------------------------------ */

/*
 * Fill one device with order-2 folios, then free the second slot of each:
 * every cluster has room but no aligned run of 4. The first order-2
 * attempt moves the nonfull clusters to frag[2]; each later attempt looks
 * at frag[2] only: one cluster under SCAN_ONE, every one under SCAN_ALL.
 */
static uint64_t frag_scans_per_attempt(void **state, enum uswap_frag_policy frag,
				       uint64_t *steps)
{
	const struct uswap_policy p = { .frag = frag };
	struct uswap *u = new_policy(state, &p, 1);
	int t = t_swapon(u, 8 * CL, 0);
	struct held *h = held_new();
	struct uswap_stats before, after;
	uswap_entry_t e;
	int rc;

	while ((rc = uswap_alloc(u, 2, &e)) == 0)
		hold(h, e, 2);
	t_eq_either(rc, -E2BIG, -ENOSPC);
	for (size_t i = 0; i < h->nr; i++)
		t_put(u, uswap_entry(uswap_entry_type(h->e[i]),
				     uswap_entry_offset(h->e[i]) + 1), 0);
	t_eq(uswap_alloc(u, 2, &e), -E2BIG); /* nonfull -> frag */
	t_true(t_info(u, t).frag_clusters >= 7);
	before = t_stats(u);
	for (int i = 0; i < 10; i++)
		t_eq(uswap_alloc(u, 2, &e), -E2BIG);
	after = t_stats(u);
	*steps = (after.list_scan_steps - before.list_scan_steps) / 10;
	t_check(u);
	free(h);
	uswap_destroy(u);
	*state = NULL;
	return (after.frag_scans - before.frag_scans) / 10;
}

static void test_frag_scan_one_touches_one_cluster_scan_all_every_one(void **state)
{
	uint64_t steps_one, steps_all;
	uint64_t one = frag_scans_per_attempt(state, USWAP_FRAG_SCAN_ONE, &steps_one);
	uint64_t all = frag_scans_per_attempt(state, USWAP_FRAG_SCAN_ALL, &steps_all);

	printf("# frag clusters per failing attempt: scan-one %llu, scan-all %llu; "
	       "list scan steps %llu vs %llu\n", (unsigned long long)one,
	       (unsigned long long)all, (unsigned long long)steps_one,
	       (unsigned long long)steps_all);
	t_eq_u64(one, 1);
	t_true(all >= 7);
	t_true(steps_all >= 7 * steps_one);
}

/* Cluster 0 holds the header, so it starts on nonfull[0]: nonfull-first
 * serves slot 1 from it, free-first opens cluster 1. */
static void test_prefer_free_opens_free_cluster_before_nonfull(void **state)
{
	const struct uswap_policy nonfull = { .cluster = USWAP_PREFER_NONFULL };
	const struct uswap_policy freefirst = { .cluster = USWAP_PREFER_FREE };
	struct uswap *u = new_policy(state, &nonfull, 1);
	uswap_entry_t e;

	t_swapon(u, 4 * CL, 0);
	e = t_alloc(u, 0);
	t_eq_u64(uswap_entry_offset(e), 1);
	uswap_destroy(u);
	u = new_policy(state, &freefirst, 1);
	t_swapon(u, 4 * CL, 0);
	e = t_alloc(u, 0);
	t_eq_u64(uswap_entry_offset(e) / CL, 1);
	t_eq_u64(t_info(u, 0).free_clusters, 2);
}

/* Fresh clusters, one order-9 folio each, in free-list order. */
static void fresh_cluster_sequence(void **state, enum uswap_freelist_policy fl,
				   uint64_t *idx, int n)
{
	const struct uswap_policy p = { .freelist = fl };
	struct uswap *u = new_policy(state, &p, 1);

	t_swapon(u, 128 * CL, 0);
	for (int i = 0; i < n; i++)
		idx[i] = uswap_entry_offset(t_alloc(u, USWAP_MAX_ORDER)) / CL;
	t_check(u);
	uswap_destroy(u);
	*state = NULL;
}

static void test_interleaved_freelist_spaces_fresh_clusters_32_apart(void **state)
{
	uint64_t inter[6], asc[6];

	fresh_cluster_sequence(state, USWAP_FREELIST_INTERLEAVED, inter, 6);
	fresh_cluster_sequence(state, USWAP_FREELIST_ASCENDING, asc, 6);
	/* Column 0 is 0 (the header's, not free), 32, 64, 96; then column 1. */
	t_eq_u64(inter[0], 32);
	t_eq_u64(inter[1], 64);
	t_eq_u64(inter[2], 96);
	t_eq_u64(inter[3], 1);
	t_eq_u64(inter[4], 33);
	t_eq_u64(inter[5], 65);
	for (int i = 0; i < 6; i++)
		t_eq_u64(asc[i], (uint64_t)i + 1);
}

/* ------------------------------------------------------------------
 * lock
 * ------------------------------------------------------------------ */

/* The same mix of order-0 and order-2 folios on 4 CPUs, 1024 kept live
 * and the oldest freed (bench alloc's fifo pattern); the device-class lock
 * count per allocation. */
static double device_locks_per_alloc(void **state, enum uswap_lock_policy lock,
				     uint64_t *hits)
{
	const struct uswap_policy p = { .lock = lock };
	struct uswap *u = new_policy(state, &p, 4);
	struct uswap_stats before, after;
	enum { N = 8000, W = 1024 };
	static uswap_entry_t live[W];
	static unsigned int live_order[W];

	t_swapon(u, 16 * CL, USWAP_PRIO_DEFAULT);
	t_swapon(u, 16 * CL, USWAP_PRIO_DEFAULT);
	before = t_stats(u);
	for (int i = 0; i < N; i++) {
		/* Each CPU allocates both orders (a CPU of only order 2 would
		 * keep its two order-2 clusters full with a live window this
		 * size: a near-full workload, not this test's subject). */
		unsigned int order = (i / 4) % 4 ? 0 : 2;

		uswap_thread_set_cpu(i % 4);
		if (i >= W)
			t_put(u, live[i % W], live_order[i % W]);
		live[i % W] = t_alloc(u, order);
		live_order[i % W] = order;
	}
	after = t_stats(u);
	for (int i = N - W; i < N; i++)
		t_put(u, live[i % W], live_order[i % W]);
	*hits = after.slot_cache_hits - before.slot_cache_hits;
	uswap_drain(u);
	t_eq_u64(t_total_inuse(u), 0);
	t_check(u);
	uswap_destroy(u);
	*state = NULL;
	return (double)(after.locks[USWAP_LOCK_DEVICE].acquired -
			before.locks[USWAP_LOCK_DEVICE].acquired) / N;
}

static void test_device_lock_taken_on_every_allocation(void **state)
{
	uint64_t hits_dev, hits_cf;
	double dev = device_locks_per_alloc(state, USWAP_LOCKING_DEVICE, &hits_dev);
	double cf = device_locks_per_alloc(state, USWAP_LOCKING_CLUSTER_FIRST, &hits_cf);

	printf("# device-class locks per allocation: device %.3f, cluster-first "
	       "%.4f; slot cache hits %llu\n", dev, cf, (unsigned long long)hits_dev);
	t_true(dev >= 1.0);
	t_true(cf * 50 < dev);
	t_true(hits_dev > 0); /* order 0 came through the slot cache */
	t_eq_u64(hits_cf, 0);
}

/* Order 0 alone, no frees: one device-locked refill per 64 slots, the rest
 * from the cache; uswap_drain() gives the parked slots back. */
static void test_device_lock_slot_cache_refills_in_batches_of_64(void **state)
{
	const struct uswap_policy p = { .lock = USWAP_LOCKING_DEVICE };
	struct uswap *u = new_policy(state, &p, 1);
	int t = t_swapon(u, 16 * CL, 0);
	struct held *h = held_new();
	struct uswap_stats st;

	for (int i = 0; i < 640; i++)
		hold(h, t_alloc(u, 0), 0);
	st = t_stats(u);
	t_eq_u64(st.slot_cache_refills, 10);
	t_eq_u64(st.slot_cache_hits, 640 - 10);
	t_true(st.locks[USWAP_LOCK_DEVICE].acquired >= 10);
	t_eq_u64(t_info(u, t).inuse, 640); /* parked slots are not in use */
	t_alloc(u, 0); /* an 11th refill: 63 slots parked */
	t_eq_u64(t_info(u, t).inuse, 641);
	t_check(u);
	put_all(u, h);
	uswap_drain(u);
	t_eq_u64(t_info(u, t).inuse, 1);
	t_check(u);
	free(h);
}

/* swapoff of a device whose slots sit in a slot cache is not refused: the
 * caches are drained first. */
static void test_device_lock_swapoff_drains_slot_caches(void **state)
{
	const struct uswap_policy p = { .lock = USWAP_LOCKING_DEVICE };
	struct uswap *u = new_policy(state, &p, 2);
	int t = t_swapon(u, 4 * CL, 0);

	t_put(u, t_alloc(u, 0), 0); /* 63 slots stay parked */
	t_eq(uswap_swapoff(u, t), 0);
}

/* ------------------------------------------------------------------
 * percpu
 * ------------------------------------------------------------------ */

/* 400 order-0 slots fit in one cluster: with the global cursor the CPU
 * stays on one device, with per-device cursors its ring reader moves on
 * every 64 slots. */
static unsigned int devices_used_by_one_cpu(void **state, enum uswap_percpu_policy pc)
{
	const struct uswap_policy p = { .percpu = pc };
	struct uswap *u = new_policy(state, &p, 4);
	struct held *h = held_new();
	unsigned int used = 0;
	int t[4];

	for (int i = 0; i < 4; i++)
		t[i] = t_swapon(u, 8 * CL, USWAP_PRIO_DEFAULT);
	uswap_thread_set_cpu(1);
	for (int i = 0; i < 400; i++)
		hold(h, t_alloc(u, 0), 0);
	for (int i = 0; i < 4; i++)
		used += t_info(u, t[i]).inuse > 0;
	t_check(u);
	put_all(u, h);
	free(h);
	uswap_destroy(u);
	*state = NULL;
	uswap_thread_set_cpu(0);
	return used;
}

static void test_percpu_global_keeps_cpu_on_one_device(void **state)
{
	t_eq(devices_used_by_one_cpu(state, USWAP_PERCPU_GLOBAL), 1);
	t_eq(devices_used_by_one_cpu(state, USWAP_PERCPU_PER_DEVICE), 4);
}

/* The global cursor wins over the rings: even a lower-priority device is
 * used while the CPU's cluster there has room (6.15..7.0 behaviour). */
static void test_percpu_global_fast_path_ignores_priority(void **state)
{
	const struct uswap_policy p = { .percpu = USWAP_PERCPU_GLOBAL };
	struct uswap *u = new_policy(state, &p, 2);
	int lo = t_swapon(u, 4 * CL, 1);
	uswap_entry_t e = t_alloc(u, 0);
	int hi;

	t_eq(uswap_entry_type(e), lo);
	hi = t_swapon(u, 4 * CL, 10);
	e = t_alloc(u, 0);
	t_eq(uswap_entry_type(e), lo); /* still the CPU's cluster */
	t_true(hi != lo);
	t_check(u);
}

/* ------------------------------------------------------------------
 * discard
 * ------------------------------------------------------------------ */

/* 7 emptied clusters wait for discard; an order-0 allocation that finds
 * nothing else discards them all under SYNC_ALL, one under BOUNDED. */
static void pending_discards(void **state, enum uswap_discard_policy d,
			     uint64_t *discarded, uint32_t *left)
{
	const struct uswap_policy p = { .discard = d };
	struct uswap *u = new_policy(state, &p, 1);
	int t = swapon_node(u, 8 * CL, 0, 0, USWAP_SWAPON_DISCARD);
	struct held *big = held_new(), *small = held_new();
	uswap_entry_t e;

	for (int i = 0; i < 7; i++)
		hold(big, t_alloc(u, USWAP_MAX_ORDER), USWAP_MAX_ORDER);
	for (unsigned int i = 0; i < CL - 1; i++)
		hold(small, t_alloc(u, 0), 0);
	t_eq(uswap_alloc(u, 0, &e), -ENOSPC);
	put_all(u, big);
	t_eq(t_info(u, t).discard_clusters, 7);
	t_check(u);
	hold(small, t_alloc(u, 0), 0);
	*discarded = t_stats(u).discards;
	*left = t_info(u, t).discard_clusters;
	t_eq_u64(t_stats(u).sync_discards, d == USWAP_DISCARD_SYNC_ALL ? 1 : 0);
	t_check(u);
	put_all(u, small);
	free(big);
	free(small);
	uswap_destroy(u);
	*state = NULL;
}

static void test_sync_all_discards_every_pending_cluster_at_once(void **state)
{
	uint64_t n;
	uint32_t left;

	pending_discards(state, USWAP_DISCARD_SYNC_ALL, &n, &left);
	t_eq_u64(n, 7);
	t_eq(left, 0);
	pending_discards(state, USWAP_DISCARD_BOUNDED, &n, &left);
	t_eq_u64(n, 1);
	t_eq(left, 6);
}

/* ------------------------------------------------------------------
 * swapoff under the policies that keep per-CPU state across devices
 * ------------------------------------------------------------------ */

static struct {
	struct uswap *u;
	_Atomic uint64_t gen;   /* even: the churned device is off */
	_Atomic int churn_type;
	_Atomic bool stop;
	_Atomic bool pause;     /* hold nothing: a swapoff is coming */
	_Atomic int paused;     /* allocators holding nothing */
	_Atomic uint64_t hits;  /* allocations on the churned device */
} C;

/* Folios an allocator keeps: more than a cluster's worth of every order
 * (a global per-CPU cursor otherwise never leaves its cluster, so a CPU
 * would never move to a device swapped on later; that is the policy). */
enum { CHURN_HOLD = 1024 };

/* One checked allocation of a random order 0..2; false to stop. A slot on
 * the churned device while it was off the whole time is a failure. */
static bool churn_alloc_one(uint64_t *rng, uswap_entry_t *e, unsigned int *order)
{
	uint64_t g1 = atomic_load(&C.gen), g2;
	int rc;

	*order = (unsigned int)t_rand_below(rng, 3);
	rc = uswap_alloc(C.u, *order, e);
	g2 = atomic_load(&C.gen);
	if (rc == -E2BIG) {
		*order = 0; /* the "before" policies may split early */
		rc = uswap_alloc(C.u, 0, e);
	}
	if (rc != 0) {
		t_fail_async("alloc order %u: %s", *order, t_errname(rc));
		return false;
	}
	if ((int)uswap_entry_type(*e) == atomic_load(&C.churn_type)) {
		atomic_fetch_add(&C.hits, 1);
		if (g1 == g2 && g1 % 2 == 0)
			t_fail_async("slot on type %u while it was swapped off",
				     uswap_entry_type(*e));
	}
	return true;
}

static void churn_put(uswap_entry_t e, unsigned int order)
{
	int rc = uswap_put_folio(C.u, e, order);

	if (rc != 0)
		t_fail_async("put_folio: %s", t_errname(rc));
}

/* Keep CHURN_HOLD folios live (so clusters fill and the CPU moves on to
 * other devices); while a swapoff is announced hold none, so it can
 * succeed while allocations still race it. */
static void *churn_allocator(void *arg)
{
	uint64_t rng = (uint64_t)(uintptr_t)arg + 1;
	uswap_entry_t held[CHURN_HOLD];
	unsigned int order[CHURN_HOLD], nr = 0, pos = 0;
	bool paused = false;

	uswap_thread_set_cpu((int)(uintptr_t)arg);
	while (!atomic_load(&C.stop) && !t_async_failed()) {
		uswap_entry_t e;
		unsigned int o;

		if (atomic_load(&C.pause) != paused) {
			paused = !paused;
			while (paused && nr)
				nr--, churn_put(held[nr], order[nr]);
			pos = 0;
			atomic_fetch_add(&C.paused, paused ? 1 : -1);
		}
		if (!churn_alloc_one(&rng, &e, &o))
			break;
		if (paused) {
			churn_put(e, o);
			sched_yield(); /* let the swapoff find nothing in use */
			continue;
		}
		if (nr == CHURN_HOLD)
			churn_put(held[pos], order[pos]);
		else
			nr++;
		held[pos] = e;
		order[pos] = o;
		pos = (pos + 1) % CHURN_HOLD;
	}
	while (nr)
		nr--, churn_put(held[nr], order[nr]);
	return NULL;
}

/* swapon/swapoff of a high-priority device while two CPUs allocate, with
 * the device lock (slot caches hold the device's slots), the global
 * per-CPU cursor (it points into the device) and legacy numbering: each
 * swapoff drains the caches and clears the cursors, and no slot of the
 * device is handed out after it returned. */
static void test_swapoff_clears_slot_caches_and_global_cursors(void **state)
{
	const struct uswap_policy p = {
		.select = USWAP_SELECT_LEGACY_PRIO,
		.percpu = USWAP_PERCPU_GLOBAL,
		.lock = USWAP_LOCKING_DEVICE,
	};
	struct uswap *u = new_policy(state, &p, 2);
	struct uswap_swapon_args churn = { .nr_slots = 4 * CL, .prio = 10 };
	long cycles = (long)(30 * t_env_scale()) + 10, ebusy = 0, with_hit = 0;
	pthread_t tid[2];

	memset(&C, 0, sizeof(C));
	C.u = u;
	atomic_store(&C.churn_type, -1);
	t_async_reset();
	t_swapon(u, 16 * CL, USWAP_PRIO_DEFAULT);
	t_swapon(u, 16 * CL, USWAP_PRIO_DEFAULT);
	for (uintptr_t i = 0; i < 2; i++)
		t_eq(pthread_create(&tid[i], NULL, churn_allocator, (void *)i), 0);
	for (long c = 0; c < cycles && !t_async_failed(); c++) {
		uint64_t h0 = atomic_load(&C.hits);
		int type, rc;

		atomic_fetch_add(&C.gen, 1); /* odd: swapon running, on, swapoff */
		type = uswap_swapon(u, &churn);
		t_true(type >= 0);
		atomic_store(&C.churn_type, type);
		for (int i = 0; i < 100000 && atomic_load(&C.hits) == h0 &&
				!t_async_failed(); i++)
			sched_yield();
		with_hit += atomic_load(&C.hits) != h0;
		atomic_store(&C.pause, true);
		while (atomic_load(&C.paused) < 2 && !t_async_failed())
			sched_yield();
		while ((rc = uswap_swapoff(u, type)) == -EBUSY)
			ebusy++;
		t_eq(rc, 0);
		atomic_fetch_add(&C.gen, 1); /* even: swapoff returned */
		atomic_store(&C.pause, false);
		while (atomic_load(&C.paused) > 0 && !t_async_failed())
			sched_yield();
	}
	atomic_store(&C.stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(tid[i], NULL);
	printf("# %ld cycles (%ld with an allocation on the churned device), "
	       "%ld -EBUSY, %llu such allocations\n", cycles, with_hit, ebusy,
	       (unsigned long long)atomic_load(&C.hits));
	t_assert_no_async_failure("swapoff under policies");
	t_true(with_hit * 2 >= cycles);
	uswap_drain(u);
	t_eq_u64(t_total_inuse(u), 0);
	t_check(u);
}

/* ------------------------------------------------------------------
 * Bad input
 * ------------------------------------------------------------------ */

static void test_policy_values_outside_their_enums_are_refused(void **state)
{
	struct uswap_config cfg = { .nr_cpus = 2 };
	struct uswap *u = NULL;

	(void)state;
	cfg.policy.select = 3;
	t_eq(uswap_create(&cfg, &u), -EINVAL);
	cfg.policy = (struct uswap_policy){ .lock = 2 };
	t_eq(uswap_create(&cfg, &u), -EINVAL);
	cfg.policy = (struct uswap_policy){ .discard = -1 };
	t_eq(uswap_create(&cfg, &u), -EINVAL);
	cfg.policy = (struct uswap_policy){ .nr_nodes = USWAP_MAX_NODES + 1 };
	t_eq(uswap_create(&cfg, &u), -EINVAL);
	t_true(u == NULL);
	cfg.policy = (struct uswap_policy){ .select = USWAP_SELECT_LEGACY_PRIO,
					    .nr_nodes = 2 };
	t_eq(uswap_create(&cfg, &u), 0);
	*state = u;
	struct uswap_swapon_args a = { .nr_slots = 4 * CL, .prio = -1, .node = 2 };

	t_eq(uswap_swapon(u, &a), -EINVAL);
	a.node = -1;
	t_eq(uswap_swapon(u, &a), -EINVAL);
	a.node = 1;
	a.flags = 0x2;
	t_eq(uswap_swapon(u, &a), -EINVAL);
	a.flags = 0;
	t_true(uswap_swapon(u, &a) >= 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, t_setup_cpu0, t_teardown_instance)
	const struct CMUnitTest tests[] = {
		T(test_legacy_prio_fills_default_devices_one_after_another),
		T(test_legacy_prio_swapoff_renumbers_later_devices),
		T(test_legacy_prio_nodes_prefer_their_own_devices),
		T(test_global_rotate_fills_equal_priority_devices_evenly),
		T(test_rings_fill_equal_priority_devices_evenly),
		T(test_global_rotate_takes_global_lock_per_allocation),
		T(test_global_rotate_readds_full_device_on_first_free),
		T(test_frag_scan_one_touches_one_cluster_scan_all_every_one),
		T(test_prefer_free_opens_free_cluster_before_nonfull),
		T(test_interleaved_freelist_spaces_fresh_clusters_32_apart),
		T(test_device_lock_taken_on_every_allocation),
		T(test_device_lock_slot_cache_refills_in_batches_of_64),
		T(test_device_lock_swapoff_drains_slot_caches),
		T(test_percpu_global_keeps_cpu_on_one_device),
		T(test_percpu_global_fast_path_ignores_priority),
		T(test_sync_all_discards_every_pending_cluster_at_once),
		T(test_swapoff_clears_slot_caches_and_global_cursors),
		T(test_policy_values_outside_their_enums_are_refused),
	};
#undef T
	return t_run(tests);
}
