/* SPDX-License-Identifier: MIT */
/*
 * Description: concurrent allocation and free against a shadow model.
 * Not a benchmark: it prints no timings and asserts none.
 *
 * Usage: test_stress [threads [scale [seed]]]
 *   threads  allocating threads (default 2)
 *   scale    multiplies the operation count (default $USWAP_STRESS_SCALE,
 *            else 1.0 = at least 10^6 operations in all; TSan runs use 0.1)
 *   seed     splitmix64 seed (default $USWAP_TEST_SEED, else random);
 *            printed at start and with any failure
 *
 * Four devices of 64 clusters (two at priority 5, two unprioritised; one
 * with a partial last cluster, one with bad slots). Each thread allocates
 * random orders 0..9 (mostly 0 and small ones) and frees random folios of
 * its own with uswap_put_folio(), switching between fill and drain phases
 * so the devices run full (-ENOSPC) and fragmented (-E2BIG) often.
 *
 * Shadow model: one bit per slot per device, set with atomic fetch_or on
 * allocation (a bit already set means the slot was handed out twice; the
 * header and bad slots start set, so handing those out is caught too) and
 * cleared before the free. At quiescent points (all threads parked on a
 * barrier) uswap_check() must pass and each device's inuse must equal its
 * shadow population. At the end everything is freed: inuse 0, every
 * cluster not holding the header, a bad slot or the device's end is free,
 * and every device still serves order-9 allocations, one per free cluster.
 *
 * The same run, shorter (a tenth of the operations), under non-default
 * allocator policies (struct uswap_policy, src/alloc/alloc_policy.h): the device
 * lock with the per-CPU slot cache, the per-CPU cursor across devices with
 * the globally rotated list, and the legacy priorities with two emulated
 * nodes. There device 2 also does page discard (USWAP_SWAPON_DISCARD), so
 * emptied clusters wait for a discard. The order-9 sweep at the end is
 * the default policy's alone: the "before" policies may split a large
 * folio while a peer still has a free cluster, by design.
 */
#include "t_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum {
	NR_DEV = 4,
	DEV_CLUSTERS = 64,
	NR_CPUS = 2,
	ROUNDS = 8,            /* quiescent checks during the run */
	BASE_OPS = 1000000,    /* operations in all at scale 1.0 */
};

struct dev_spec {
	uint64_t nr_slots;
	int prio;
	const uint64_t *bad;
	size_t nr_bad;
};

/* Clusters 1 (700, 701), 9 (5000) and 63 (the last slot) hold bad slots. */
static const uint64_t dev3_bad[] = { 700, 701, 5000, DEV_CLUSTERS * USWAP_CLUSTER_SLOTS - 1 };

static const struct dev_spec specs[NR_DEV] = {
	{ DEV_CLUSTERS * USWAP_CLUSTER_SLOTS, 5, NULL, 0 },
	/* Not a multiple of 512: the last cluster is partial, never free. */
	{ DEV_CLUSTERS * USWAP_CLUSTER_SLOTS - 100, 5, NULL, 0 },
	{ DEV_CLUSTERS * USWAP_CLUSTER_SLOTS, USWAP_PRIO_DEFAULT, NULL, 0 },
	{ DEV_CLUSTERS * USWAP_CLUSTER_SLOTS, USWAP_PRIO_DEFAULT, dev3_bad,
	  T_ARRAY_SIZE(dev3_bad) },
};

/* Command line. */
static struct {
	int threads;
	double scale;
	uint64_t seed;
} opt;

/* ------------------------------------------------------------------
 * Shadow bitmap: bit set = slot handed out (or never usable)
 * ------------------------------------------------------------------ */

struct shadow {
	_Atomic uint64_t *bits;
	size_t nr_words;
	uint64_t base; /* bits set for the header, bad slots and the tail */
};

static uint64_t word_mask(uint64_t b, uint64_t len)
{
	return len == 64 ? ~UINT64_C(0) : ((UINT64_C(1) << len) - 1) << b;
}

/* Set [off, off+n); false if any bit was already set. */
static bool shadow_take(struct shadow *sh, uint64_t off, uint64_t n)
{
	bool ok = true;

	for (uint64_t bit = off; bit < off + n;) {
		uint64_t b = bit % 64, len = 64 - b;

		if (len > off + n - bit)
			len = off + n - bit;
		if (atomic_fetch_or(&sh->bits[bit / 64], word_mask(b, len)) &
		    word_mask(b, len))
			ok = false;
		bit += len;
	}
	return ok;
}

/* Clear [off, off+n); false if any bit was not set. */
static bool shadow_release(struct shadow *sh, uint64_t off, uint64_t n)
{
	bool ok = true;

	for (uint64_t bit = off; bit < off + n;) {
		uint64_t b = bit % 64, len = 64 - b, mask;

		if (len > off + n - bit)
			len = off + n - bit;
		mask = word_mask(b, len);
		if ((atomic_fetch_and(&sh->bits[bit / 64], ~mask) & mask) != mask)
			ok = false;
		bit += len;
	}
	return ok;
}

static uint64_t shadow_population(struct shadow *sh)
{
	uint64_t n = 0;

	for (size_t i = 0; i < sh->nr_words; i++)
		n += (uint64_t)__builtin_popcountll(atomic_load(&sh->bits[i]));
	return n;
}

static void shadow_init(struct shadow *sh, const struct dev_spec *spec)
{
	sh->nr_words = (spec->nr_slots + 63) / 64;
	sh->bits = calloc(sh->nr_words, sizeof(*sh->bits));
	t_true(sh->bits != NULL);
	shadow_take(sh, 0, 1);
	for (size_t i = 0; i < spec->nr_bad; i++)
		shadow_take(sh, spec->bad[i], 1);
	if (spec->nr_slots % 64)
		shadow_take(sh, spec->nr_slots, 64 - spec->nr_slots % 64);
	sh->base = shadow_population(sh);
}

/* ------------------------------------------------------------------
 * Shared state and workers
 * ------------------------------------------------------------------ */

struct live {
	uswap_entry_t e;
	unsigned int order;
};

struct worker {
	int id;
	pthread_t tid;
	uint64_t rng;
	uint64_t nr_ops;
	struct live *live;
	size_t nr_live;
	/* What happened, for the summary line. */
	uint64_t allocs, frees, enospc, e2big;
};

static struct {
	struct uswap *u;
	struct uswap_policy policy;
	bool policy_run; /* not the default policy: see the header */
	int types[NR_DEV];
	int dev_of_type[USWAP_MAX_DEVICES]; /* -1: not one of ours */
	struct shadow sh[NR_DEV];
	pthread_barrier_t barrier;
	size_t live_cap; /* per worker: every usable slot as order 0 */
} S;

/* Orders 0..9 weighted toward 0 and small orders (percent). */
static unsigned int pick_order(uint64_t *rng)
{
	static const unsigned int cumulative[USWAP_NR_ORDERS] = {
		50, 65, 75, 82, 88, 92, 95, 97, 98, 100
	};
	unsigned int r = (unsigned int)t_rand_below(rng, 100);
	unsigned int order = 0;

	while (r >= cumulative[order])
		order++;
	return order;
}

/* One uswap_alloc() checked against the shadow; returns its result. */
static int alloc_one(struct worker *w, unsigned int order)
{
	uint64_t n = UINT64_C(1) << order, off;
	uswap_entry_t e;
	int rc = uswap_alloc(S.u, order, &e), d;

	if (rc == -ENOSPC) {
		w->enospc++;
		return rc;
	}
	if (rc == -E2BIG && order > 0) {
		w->e2big++;
		return rc;
	}
	if (rc != 0) {
		t_fail_async("thread %d: alloc order %u returned %d (%s)", w->id,
			     order, rc, t_errname(rc));
		return rc;
	}
	d = S.dev_of_type[uswap_entry_type(e)];
	off = uswap_entry_offset(e);
	if (d < 0 || off % n != 0 || off + n > specs[d].nr_slots) {
		t_fail_async("thread %d: alloc order %u returned bad entry type %u offset %llu",
			     w->id, order, uswap_entry_type(e),
			     (unsigned long long)off);
		return -EINVAL;
	}
	if (!shadow_take(&S.sh[d], off, n)) {
		t_fail_async("slot handed out twice: type %u offset %llu order %u "
			     "(thread %d; or a header/bad slot)",
			     uswap_entry_type(e), (unsigned long long)off, order,
			     w->id);
		return -EEXIST;
	}
	w->live[w->nr_live++] = (struct live){ e, order };
	w->allocs++;
	return 0;
}

/*
 * A folio of a random order. On -E2BIG it is split, as the kernel does
 * after a swpout_fallback: its pages go out as order-0 slots, until
 * -ENOSPC. This is what lets fill phases reach a full system.
 */
static int do_alloc(struct worker *w)
{
	unsigned int order = pick_order(&w->rng);
	int rc = alloc_one(w, order);

	for (uint64_t i = 0; rc == -E2BIG && i < (UINT64_C(1) << order); i++) {
		int rc0 = alloc_one(w, 0);

		if (rc0 != 0)
			return rc0;
	}
	return rc;
}

static void free_one(struct worker *w, size_t i)
{
	struct live l = w->live[i];
	int d = S.dev_of_type[uswap_entry_type(l.e)];
	uint64_t off = uswap_entry_offset(l.e);
	int rc;

	w->live[i] = w->live[--w->nr_live];
	/* Clear the shadow first: once freed, another thread may get it. */
	if (!shadow_release(&S.sh[d], off, UINT64_C(1) << l.order))
		t_fail_async("shadow lost slot: type %u offset %llu order %u",
			     uswap_entry_type(l.e), (unsigned long long)off,
			     l.order);
	rc = uswap_put_folio(S.u, l.e, l.order);
	if (rc != 0)
		t_fail_async("thread %d: put_folio type %u offset %llu order %u: %s",
			     w->id, uswap_entry_type(l.e),
			     (unsigned long long)off, l.order, t_errname(rc));
	w->frees++;
}

/* Runs on worker 0 while every other worker waits at the barrier. */
static void quiescent_check(const char *when)
{
	if (uswap_check(S.u) != 0)
		t_fail_async("uswap_check failed %s (see stderr)", when);
	for (int d = 0; d < NR_DEV; d++) {
		struct uswap_device_info info;
		uint64_t expect = shadow_population(&S.sh[d]) - S.sh[d].base;

		if (uswap_device_info(S.u, S.types[d], &info) != 0)
			t_fail_async("device %d vanished %s", S.types[d], when);
		else if (info.inuse != expect)
			t_fail_async("%s: device %d inuse %llu, shadow says %llu",
				     when, S.types[d],
				     (unsigned long long)info.inuse,
				     (unsigned long long)expect);
	}
}

/*
 * Fill phases allocate 3 times in 4 until -ENOSPC was seen a random number
 * of times (near full, large folios get -E2BIG and are split, and
 * allocations move between priorities). Drain phases free 7 times in 10
 * for a random number of operations.
 */
static void one_op(struct worker *w, bool *fill, uint64_t *left)
{
	bool alloc = w->nr_live == 0 ||
		     t_rand_below(&w->rng, 100) < (*fill ? 75u : 30u);

	if (alloc) {
		int rc = do_alloc(w);

		if (rc == -ENOSPC && *fill && --*left == 0) {
			*fill = false;
			*left = 256 + t_rand_below(&w->rng, 8192);
		}
	} else {
		free_one(w, t_rand_below(&w->rng, w->nr_live));
	}
	if (!*fill && --*left == 0) {
		*fill = true;
		*left = 1 + t_rand_below(&w->rng, 16);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t per_round = (w->nr_ops + ROUNDS - 1) / ROUNDS;
	bool fill = true;
	uint64_t left = 1 + t_rand_below(&w->rng, 16);

	/* Worker 0 follows sched_getcpu(); the others share pinned CPUs. */
	if (w->id > 0)
		uswap_thread_set_cpu((w->id - 1) % NR_CPUS);
	for (int round = 0; round < ROUNDS; round++) {
		for (uint64_t i = 0; i < per_round && !t_async_failed(); i++)
			one_op(w, &fill, &left);
		/* Everyone (even after a failure) reaches both barriers. */
		pthread_barrier_wait(&S.barrier);
		if (w->id == 0 && !t_async_failed())
			quiescent_check("at a quiescent point");
		pthread_barrier_wait(&S.barrier);
	}
	while (w->nr_live > 0)
		free_one(w, w->nr_live - 1);
	return NULL;
}

/* ------------------------------------------------------------------
 * After the run
 * ------------------------------------------------------------------ */

/* Clusters that can never be wholly free: header, bad slots, the end. */
static uint32_t expected_free_clusters(const struct dev_spec *spec)
{
	uint32_t nr_clusters = (uint32_t)((spec->nr_slots + USWAP_CLUSTER_SLOTS - 1) /
					  USWAP_CLUSTER_SLOTS);
	bool *pinned = calloc(nr_clusters, sizeof(bool));
	uint32_t nr_free = 0;

	t_true(pinned != NULL);
	pinned[0] = true;
	for (size_t i = 0; i < spec->nr_bad; i++)
		pinned[spec->bad[i] / USWAP_CLUSTER_SLOTS] = true;
	if (spec->nr_slots % USWAP_CLUSTER_SLOTS)
		pinned[nr_clusters - 1] = true;
	for (uint32_t c = 0; c < nr_clusters; c++)
		nr_free += !pinned[c];
	free(pinned);
	return nr_free;
}

static void assert_all_free_again(void)
{
	uswap_drain(S.u); /* slots parked in slot caches (LOCKING_DEVICE) */
	for (int d = 0; d < NR_DEV; d++) {
		struct uswap_device_info info = t_info(S.u, S.types[d]);

		t_eq_u64(info.inuse, 0);
		t_eq_u64(shadow_population(&S.sh[d]), S.sh[d].base);
		t_eq_u64(info.nr_slots, specs[d].nr_slots);
		t_eq_u64(info.pages, specs[d].nr_slots - 1 - specs[d].nr_bad);
		t_eq(info.nr_clusters, (specs[d].nr_slots + USWAP_CLUSTER_SLOTS - 1) /
					       USWAP_CLUSTER_SLOTS);
		/* Emptied clusters of a discard device may wait for it. */
		if (info.free_clusters + info.discard_clusters !=
		    expected_free_clusters(&specs[d]))
			fail_msg("seed %llu: device %d has %u free clusters (and %u "
				 "waiting for discard) after everything was "
				 "freed, expected %u",
				 (unsigned long long)opt.seed, S.types[d],
				 info.free_clusters, info.discard_clusters,
				 expected_free_clusters(&specs[d]));
	}
	t_check(S.u);
}

/*
 * Allocate order 9 until nothing is left. Priority 5 is served first;
 * when its clusters are gone it answers -E2BIG (it never pushes a large
 * folio down while it has free slots), so its leftover slots are filled
 * with order 0 to let the -1 devices serve. Each device must yield one
 * order-9 folio per free cluster.
 */
static void assert_every_device_serves_order9(void)
{
	size_t cap = NR_DEV * DEV_CLUSTERS * USWAP_CLUSTER_SLOTS;
	struct live *held = malloc(cap * sizeof(*held));
	uint64_t order9[USWAP_MAX_DEVICES] = { 0 };
	size_t n = 0;
	uswap_entry_t e;
	int rc;

	t_true(held != NULL);
	uswap_thread_set_cpu(0);
	for (;;) {
		rc = uswap_alloc(S.u, USWAP_MAX_ORDER, &e);
		if (rc == 0) {
			t_eq_u64(uswap_entry_offset(e) % USWAP_CLUSTER_SLOTS, 0);
			order9[uswap_entry_type(e)]++;
			held[n++] = (struct live){ e, USWAP_MAX_ORDER };
			continue;
		}
		t_eq_either(rc, -E2BIG, -ENOSPC);
		if (rc == -ENOSPC)
			break;
		rc = uswap_alloc(S.u, 0, &e);
		if (rc == -ENOSPC)
			break;
		t_eq(rc, 0);
		t_true(n < cap);
		held[n++] = (struct live){ e, 0 };
	}
	for (int d = 0; d < NR_DEV; d++)
		if (order9[S.types[d]] != expected_free_clusters(&specs[d]))
			fail_msg("device %d (prio %d) served %llu order-9 folios, "
				 "expected %u (one per free cluster)",
				 S.types[d], specs[d].prio,
				 (unsigned long long)order9[S.types[d]],
				 expected_free_clusters(&specs[d]));
	for (size_t i = 0; i < n; i++)
		t_put(S.u, held[i].e, held[i].order);
	free(held);
	uswap_thread_set_cpu(-1);
}

/* A policy run must have gone through the policy's own code. */
static void assert_policy_exercised(void)
{
	struct uswap_stats st = t_stats(S.u);

	printf("# policy: slot cache hits %llu refills %llu, requeues %llu, "
	       "discards %llu (sync %llu), list scan steps %llu\n",
	       (unsigned long long)st.slot_cache_hits,
	       (unsigned long long)st.slot_cache_refills,
	       (unsigned long long)st.avail_requeue,
	       (unsigned long long)st.discards,
	       (unsigned long long)st.sync_discards,
	       (unsigned long long)st.list_scan_steps);
	if (S.policy.lock == USWAP_LOCKING_DEVICE)
		t_true(st.slot_cache_hits > 0 && st.slot_cache_refills > 0);
	if (S.policy.select != USWAP_SELECT_RINGS)
		t_true(st.avail_requeue > 0);
	/* Discards need a full system at the right moment: counted on
	 * purpose in tests/test_policy.c, only printed here. */
}

/* One run of the workers on four devices under @policy (NULL: the
 * default), with @scale times BASE_OPS operations. */
static void run_stress(const struct uswap_policy *policy, double scale)
{
	uint64_t total_ops = (uint64_t)(BASE_OPS * scale + 0.5);
	struct worker *w = calloc((size_t)opt.threads, sizeof(*w));
	struct uswap_config cfg = { .nr_cpus = NR_CPUS };
	uint64_t allocs = 0, frees = 0, enospc = 0, e2big = 0;
	char context[160];

	t_true(w != NULL);
	if (total_ops < (uint64_t)opt.threads * ROUNDS)
		total_ops = (uint64_t)opt.threads * ROUNDS;
	printf("# test_stress: threads %d scale %g seed %llu ops >= %llu\n",
	       opt.threads, scale, (unsigned long long)opt.seed,
	       (unsigned long long)total_ops);
	snprintf(context, sizeof(context), "seed %llu (rerun: test_stress %d %g %llu)",
		 (unsigned long long)opt.seed, opt.threads, opt.scale,
		 (unsigned long long)opt.seed);

	memset(&S, 0, sizeof(S));
	t_async_reset();
	if (policy) {
		S.policy = *policy;
		S.policy_run = true;
		cfg.policy = *policy;
	}
	t_eq(uswap_create(&cfg, &S.u), 0);
	for (int t = 0; t < USWAP_MAX_DEVICES; t++)
		S.dev_of_type[t] = -1;
	for (int d = 0; d < NR_DEV; d++) {
		struct uswap_swapon_args a = {
			.nr_slots = specs[d].nr_slots,
			.prio = specs[d].prio,
			.bad_slots = specs[d].bad,
			.nr_bad = specs[d].nr_bad,
		};

		if (S.policy_run) {
			a.flags = d == 2 ? USWAP_SWAPON_DISCARD : 0;
			a.node = S.policy.nr_nodes > 1 ? d % 2 : 0;
		}
		S.types[d] = uswap_swapon(S.u, &a);
		t_true(S.types[d] >= 0);
		S.dev_of_type[S.types[d]] = d;
		shadow_init(&S.sh[d], &specs[d]);
		S.live_cap += specs[d].nr_slots;
	}
	t_eq(pthread_barrier_init(&S.barrier, NULL, (unsigned int)opt.threads), 0);

	for (int i = 0; i < opt.threads; i++) {
		w[i].id = i;
		w[i].rng = opt.seed ^ ((uint64_t)(i + 1) * UINT64_C(0x9e3779b97f4a7c15));
		w[i].nr_ops = (total_ops + (uint64_t)opt.threads - 1) / (uint64_t)opt.threads;
		w[i].live = malloc(S.live_cap * sizeof(struct live));
		t_true(w[i].live != NULL);
		t_eq(pthread_create(&w[i].tid, NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < opt.threads; i++) {
		pthread_join(w[i].tid, NULL);
		allocs += w[i].allocs;
		frees += w[i].frees;
		enospc += w[i].enospc;
		e2big += w[i].e2big;
		free(w[i].live);
	}
	pthread_barrier_destroy(&S.barrier);
	printf("# %llu allocations, %llu frees, %llu -ENOSPC, %llu -E2BIG\n",
	       (unsigned long long)allocs, (unsigned long long)frees,
	       (unsigned long long)enospc, (unsigned long long)e2big);
	t_assert_no_async_failure(context);
	/* A full-size run must have reached full and fragmented states. */
	if (total_ops >= 100000)
		t_true(enospc > 0 && e2big > 0);

	if (S.policy_run)
		assert_policy_exercised();
	assert_all_free_again();
	if (!S.policy_run) {
		assert_every_device_serves_order9();
		assert_all_free_again();
	}

	uswap_destroy(S.u);
	for (int d = 0; d < NR_DEV; d++)
		free(S.sh[d].bits);
	free(w);
}

static void test_concurrent_alloc_free_never_hands_out_slot_twice_nor_leaks(void **state)
{
	(void)state;
	run_stress(NULL, opt.scale);
}

/* Seed 1 "before": device lock around each allocation and free, order 0
 * through the 64-slot per-CPU cache, with seed 2's and 3's "before" list
 * handling (free first, the whole frag list, interleaved free list). */
static void test_policy_device_lock_slot_cache_never_hands_out_slot_twice(void **state)
{
	const struct uswap_policy p = {
		.lock = USWAP_LOCKING_DEVICE,
		.frag = USWAP_FRAG_SCAN_ALL,
		.cluster = USWAP_PREFER_FREE,
		.freelist = USWAP_FREELIST_INTERLEAVED,
	};

	(void)state;
	run_stress(&p, opt.scale / 10);
}

/* Seed 5 "before": one cursor per CPU across devices, the global list
 * requeued under one lock, synchronous discard of everything pending. */
static void test_policy_global_percpu_rotate_never_hands_out_slot_twice(void **state)
{
	const struct uswap_policy p = {
		.select = USWAP_SELECT_GLOBAL_ROTATE,
		.percpu = USWAP_PERCPU_GLOBAL,
		.discard = USWAP_DISCARD_SYNC_ALL,
	};

	(void)state;
	run_stress(&p, opt.scale / 10);
}

/* Seed 4 "before" with two nodes, on top of the device lock and the
 * global per-CPU cursor (both swapoff-sensitive pieces at once). */
static void test_policy_legacy_prio_nodes_never_hands_out_slot_twice(void **state)
{
	const struct uswap_policy p = {
		.select = USWAP_SELECT_LEGACY_PRIO,
		.nr_nodes = 2,
		.lock = USWAP_LOCKING_DEVICE,
		.percpu = USWAP_PERCPU_GLOBAL,
	};

	(void)state;
	run_stress(&p, opt.scale / 10);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_alloc_free_never_hands_out_slot_twice_nor_leaks),
		cmocka_unit_test(test_policy_device_lock_slot_cache_never_hands_out_slot_twice),
		cmocka_unit_test(test_policy_global_percpu_rotate_never_hands_out_slot_twice),
		cmocka_unit_test(test_policy_legacy_prio_nodes_never_hands_out_slot_twice),
	};

	opt.threads = argc > 1 ? atoi(argv[1]) : 2;
	opt.scale = argc > 2 ? strtod(argv[2], NULL) : t_env_scale();
	opt.seed = argc > 3 ? strtoull(argv[3], NULL, 0) : t_env_seed();
	if (opt.threads < 1 || opt.scale <= 0) {
		fprintf(stderr, "usage: %s [threads [scale [seed]]]\n", argv[0]);
		return 2;
	}
	return t_run(tests);
}
