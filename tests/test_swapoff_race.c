/* SPDX-License-Identifier: MIT */
/*
 * Description: swapon/swapoff of an empty device while other threads
 * allocate. Invariant: once uswap_swapoff() has returned 0, no slot on
 * that device is handed out, and swapoff never succeeds while a slot on
 * the device is in use.
 *
 * Usage: test_swapoff_race [cycles [seed]] (default 1000 cycles times
 * $USWAP_STRESS_SCALE).
 *
 * Two base devices sit at priority 1. A churn thread swaps a small device
 * on at priority 10 (above the base, so allocators go there first) and off
 * again, retrying swapoff on -EBUSY. Two allocator threads allocate orders
 * 0..2 and free almost every folio right away, so swapoff mostly
 * succeeds; one allocation in HOLD_ONE_IN is kept for HOLD_ALLOCS more
 * allocations, so a swapoff that ignored in-use slots would be seen.
 *
 * The churn thread publishes its state in one counter, gen, whose value
 * mod 4 says: 0 off (swapoff returned 0), 1 swapon running, 2 on (swapon
 * returned), 3 swapoff running; and counts successful swapoffs in offs.
 * An allocator reads gen before (g1) and after (g2) each uswap_alloc():
 *  - a slot off the base devices with g2 % 4 == 0 is a failure: either it
 *    was handed out after swapoff returned, or swapoff returned 0 while
 *    the slot was in use (we still hold it);
 *  - with g1 == g2 and g1 % 4 == 2 the device was on throughout, so strict
 *    priority says the slot must come from it, not from a base device;
 *  - when a slot off the base devices is given back, offs must not have
 *    moved since its allocation (no swapoff may succeed while it is held);
 *  - -E2BIG is wrong at any time: every device has free clusters.
 * After each swapon the churn thread waits (bounded) for an allocation on
 * the new device, so the test proves allocators really used it.
 */
#include "t_util.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum {
	NR_ALLOCATORS = 2,
	BASE_CLUSTERS = 32,
	CHURN_CLUSTERS = 16,  /* room for every CPU's per-order clusters */
	BASE_PRIO = 1,
	CHURN_PRIO = 10,
	BASE_CYCLES = 1000,
	MAX_EBUSY_PER_CYCLE = 100000,
	HIT_WAIT_YIELDS = 100000,
	MAX_HELD = 2,          /* folios an allocator keeps for a while */
	HOLD_ONE_IN = 1024,    /* how often an allocation is kept */
	HOLD_ALLOCS = 32,      /* for how many further allocations */
};

static struct {
	struct uswap *u;
	int base[2];
	_Atomic uint64_t gen;     /* see above; only the churn thread writes */
	_Atomic uint64_t offs;    /* swapoffs that returned 0, counted after */
	_Atomic int churn_type;   /* valid while gen % 4 == 2 */
	_Atomic bool stop;
	_Atomic uint64_t hits;    /* allocations on a churned device */
	_Atomic long spurious_e2big;
	unsigned int first_e2big_order; /* written by the first only */
	uint64_t first_e2big_gen[2];
	uint64_t seed;
	long cycles;
	/* Churn results, read after join. */
	long swapoffs, ebusy, cycles_with_hit;
} R;

static bool is_base(unsigned int type)
{
	return type == (unsigned int)R.base[0] || type == (unsigned int)R.base[1];
}

/* A folio an allocator holds, with gen read right after its allocation. */
struct held {
	uswap_entry_t e;
	unsigned int order;
	uint64_t g_alloc;
	uint64_t offs_alloc; /* R.offs read right after the allocation */
	uint64_t release_at; /* in the allocator's allocation count */
};

struct allocator {
	int id;
	pthread_t tid;
	uint64_t rng;
	uint64_t allocs;
	struct held held[MAX_HELD];
	int nr_held;
};

/* Check one fresh folio against the churn state; see the file comment. */
static void check_folio(uswap_entry_t e, uint64_t g1, uint64_t g2)
{
	unsigned int type = uswap_entry_type(e);

	if (is_base(type)) {
		if (g1 == g2 && g1 % 4 == 2)
			t_fail_async("strict priority: slot from prio-%d device %u while "
				     "the prio-%d device %d was on (gen %llu)",
				     BASE_PRIO, type, CHURN_PRIO,
				     atomic_load(&R.churn_type),
				     (unsigned long long)g1);
		return;
	}
	atomic_fetch_add(&R.hits, 1);
	if (g2 % 4 == 0)
		t_fail_async("slot type %u offset %llu in use after its swapoff "
			     "returned 0 (gen %llu -> %llu)", type,
			     (unsigned long long)uswap_entry_offset(e),
			     (unsigned long long)g1, (unsigned long long)g2);
	else if (g1 == g2 && g1 % 4 == 2 &&
		 type != (unsigned int)atomic_load(&R.churn_type))
		t_fail_async("slot on type %u, which is neither a base device nor "
			     "the churned one (%d)", type,
			     atomic_load(&R.churn_type));
}

/*
 * Every device has room for the few slots in flight, so -E2BIG ("no run of
 * this order at the serving priority: split") is never right here, not
 * even while the prio-10 device is leaving: then prio 1 serves.
 */
static void note_spurious_e2big(unsigned int order, uint64_t g1, uint64_t g2)
{
	if (atomic_fetch_add(&R.spurious_e2big, 1) == 0) {
		R.first_e2big_order = order;
		R.first_e2big_gen[0] = g1;
		R.first_e2big_gen[1] = g2;
	}
}

/* Every device has room for the few slots in flight: no failure is right. */
static void report_alloc_failure(struct allocator *a, unsigned int order,
				 int rc, uint64_t g1, uint64_t g2)
{
	int type = atomic_load(&R.churn_type);
	struct uswap_device_info info = { 0 };
	int info_rc = uswap_device_info(R.u, type, &info);

	t_fail_async("allocator %d: order %u: %s (gen %llu -> %llu); every device "
		     "is nearly empty; churned type %d: %s, inuse %llu, clusters "
		     "free %u nonfull %u frag %u full %u percpu %u",
		     a->id, order, t_errname(rc), (unsigned long long)g1,
		     (unsigned long long)g2, type,
		     info_rc == 0 ? "on" : t_errname(info_rc),
		     (unsigned long long)info.inuse, info.free_clusters,
		     info.nonfull_clusters, info.frag_clusters,
		     info.full_clusters, info.percpu_clusters);
}

static void think(uint64_t *rng)
{
	static _Atomic uint64_t sink;
	uint64_t n = t_rand_below(rng, 2048), x = 0;

	for (uint64_t i = 0; i < n; i++)
		x += t_rand(rng);
	atomic_store_explicit(&sink, x, memory_order_relaxed);
}

/*
 * Give a folio back. If a swapoff returned 0 since it was allocated (offs
 * moved), that swapoff dropped a slot in use (or, if it returned before
 * the allocation, the slot was handed out after it): report it before the
 * put, which would touch a freed device.
 */
static void release(struct allocator *a, const struct held *h)
{
	uint64_t offs_now = atomic_load(&R.offs);
	int rc;

	if (!is_base(uswap_entry_type(h->e)) && offs_now != h->offs_alloc) {
		t_fail_async("swapoff of type %u returned 0 while slot %llu was in "
			     "use (allocated at gen %llu after %llu swapoffs, "
			     "now %llu swapoffs)", uswap_entry_type(h->e),
			     (unsigned long long)uswap_entry_offset(h->e),
			     (unsigned long long)h->g_alloc,
			     (unsigned long long)h->offs_alloc,
			     (unsigned long long)offs_now);
		return;
	}
	rc = uswap_put_folio(R.u, h->e, h->order);
	if (rc != 0)
		t_fail_async("allocator %d: put_folio type %u offset %llu: %s",
			     a->id, uswap_entry_type(h->e),
			     (unsigned long long)uswap_entry_offset(h->e),
			     t_errname(rc));
}

/* Release the held folios that are due (all of them with @all). */
static void release_due(struct allocator *a, bool all)
{
	for (int i = 0; i < a->nr_held;) {
		if (all || a->held[i].release_at <= a->allocs) {
			release(a, &a->held[i]);
			a->held[i] = a->held[--a->nr_held];
		} else {
			i++;
		}
	}
}

static void *allocator_main(void *arg)
{
	struct allocator *a = arg;

	uswap_thread_set_cpu(a->id % 2);
	while (!atomic_load(&R.stop) && !t_async_failed()) {
		struct held h = { .order = (unsigned int)t_rand_below(&a->rng, 3) };
		uint64_t g1;
		int rc;

		g1 = atomic_load(&R.gen);
		rc = uswap_alloc(R.u, h.order, &h.e);
		h.g_alloc = atomic_load(&R.gen);
		h.offs_alloc = atomic_load(&R.offs);
		if (rc == -E2BIG && h.order > 0) {
			/* Checked after the run, so the swapoff invariant is
			 * still tested over every cycle. */
			note_spurious_e2big(h.order, g1, h.g_alloc);
			continue;
		}
		if (rc != 0) {
			report_alloc_failure(a, h.order, rc, g1, h.g_alloc);
			break;
		}
		check_folio(h.e, g1, h.g_alloc);
		a->allocs++;
		/* Mostly free at once (a held slot makes swapoff answer
		 * -EBUSY); now and then hold one across many allocations, so
		 * a swapoff that ignores in-use slots is caught at release. */
		if (a->nr_held < MAX_HELD && t_rand_below(&a->rng, HOLD_ONE_IN) == 0) {
			h.release_at = a->allocs + HOLD_ALLOCS;
			a->held[a->nr_held++] = h;
		} else {
			release(a, &h);
		}
		release_due(a, false);
		/* Work between folios (no slot held), as a real swap-out
		 * path would: keeps the share of time a slot is held small,
		 * so most swapoffs get past their in-use check and race the
		 * allocators in the ring rebuild instead. */
		think(&a->rng);
	}
	release_due(a, true);
	return NULL;
}

/* After swapon: give allocators a chance to land on the new device. */
static bool wait_for_hit(void)
{
	uint64_t h0 = atomic_load(&R.hits);

	for (int i = 0; i < HIT_WAIT_YIELDS && !t_async_failed(); i++) {
		if (atomic_load(&R.hits) != h0)
			return true;
		sched_yield();
	}
	return false;
}

/* One swapoff that must eventually succeed; false on failure. */
static bool swapoff_until_done(int type)
{
	struct uswap_device_info info;

	for (long attempt = 0; attempt < MAX_EBUSY_PER_CYCLE; attempt++) {
		if (t_async_failed())
			return false;
		int rc;

		atomic_fetch_add(&R.gen, 1); /* 2 -> 3: swapoff running */
		rc = uswap_swapoff(R.u, type);
		if (rc == 0) {
			atomic_fetch_add(&R.offs, 1);
			atomic_fetch_add(&R.gen, 1); /* 3 -> 0: off */
			R.swapoffs++;
			if (uswap_device_info(R.u, type, &info) != -ENOENT)
				t_fail_async("device %d still listed after swapoff", type);
			return true;
		}
		if (rc != -EBUSY) {
			t_fail_async("swapoff(%d) = %s", type, t_errname(rc));
			return false;
		}
		/* Put back as it was: on, in its ring, same priority. */
		R.ebusy++;
		atomic_fetch_add(&R.gen, 3); /* 3 -> 2 (mod 4): on again */
		if (uswap_device_info(R.u, type, &info) != 0 || info.prio != CHURN_PRIO)
			t_fail_async("device %d not restored after -EBUSY", type);
		sched_yield();
	}
	t_fail_async("swapoff(%d) still -EBUSY after %d attempts while allocators "
		     "free at once", type, MAX_EBUSY_PER_CYCLE);
	return false;
}

static void *churn_main(void *arg)
{
	struct uswap_swapon_args args = {
		.name = "churn",
		.nr_slots = CHURN_CLUSTERS * USWAP_CLUSTER_SLOTS,
		.prio = CHURN_PRIO,
	};

	(void)arg;
	for (long cycle = 0; cycle < R.cycles && !t_async_failed(); cycle++) {
		int type;

		atomic_fetch_add(&R.gen, 1); /* 0 -> 1: swapon running */
		type = uswap_swapon(R.u, &args);
		if (type < 0 || is_base((unsigned int)type)) {
			t_fail_async("swapon in cycle %ld = %d (%s)", cycle, type,
				     t_errname(type));
			break;
		}
		atomic_store(&R.churn_type, type);
		atomic_fetch_add(&R.gen, 1); /* 1 -> 2: on */
		R.cycles_with_hit += wait_for_hit();
		if (!swapoff_until_done(type))
			break;
	}
	atomic_store(&R.stop, true);
	return NULL;
}

static void test_no_slot_handed_out_after_swapoff_returns(void **state)
{
	struct uswap_config cfg = { .nr_cpus = 2 };
	struct allocator a[NR_ALLOCATORS];
	pthread_t churn;
	uint64_t allocs = 0;
	char context[96];

	(void)state;
	t_async_reset();
	t_eq(uswap_create(&cfg, &R.u), 0);
	for (int i = 0; i < 2; i++)
		R.base[i] = t_swapon(R.u, BASE_CLUSTERS * USWAP_CLUSTER_SLOTS, BASE_PRIO);
	printf("# test_swapoff_race: %ld cycles, seed %llu\n", R.cycles,
	       (unsigned long long)R.seed);

	for (int i = 0; i < NR_ALLOCATORS; i++) {
		a[i] = (struct allocator){ .id = i };
		a[i].rng = R.seed + (uint64_t)i;
		t_eq(pthread_create(&a[i].tid, NULL, allocator_main, &a[i]), 0);
	}
	t_eq(pthread_create(&churn, NULL, churn_main, NULL), 0);
	pthread_join(churn, NULL);
	for (int i = 0; i < NR_ALLOCATORS; i++) {
		pthread_join(a[i].tid, NULL);
		allocs += a[i].allocs;
	}
	printf("# %ld swapoffs, %ld -EBUSY, %ld of %ld cycles saw an allocation "
	       "on the churned device, %llu hits, %llu allocations, %ld -E2BIG\n",
	       R.swapoffs, R.ebusy, R.cycles_with_hit, R.cycles,
	       (unsigned long long)atomic_load(&R.hits),
	       (unsigned long long)allocs, atomic_load(&R.spurious_e2big));
	snprintf(context, sizeof(context), "seed %llu", (unsigned long long)R.seed);
	t_assert_no_async_failure(context);

	t_eq(R.swapoffs, R.cycles);
	/* The higher priority must really have drawn the allocators. */
	if (R.cycles_with_hit * 2 < R.cycles)
		fail_msg("only %ld of %ld cycles saw an allocation on the prio-%d device",
			 R.cycles_with_hit, R.cycles, CHURN_PRIO);
	for (int i = 0; i < 2; i++)
		t_eq_u64(t_info(R.u, R.base[i]).inuse, 0);
	t_check(R.u);
	if (atomic_load(&R.spurious_e2big))
		fail_msg("%ld allocations of order 1..2 got -E2BIG although every "
			 "device had free clusters; first: order %u, gen %llu -> "
			 "%llu (mod 4: 1 swapon, 2 on, 3 swapoff running)",
			 atomic_load(&R.spurious_e2big), R.first_e2big_order,
			 (unsigned long long)R.first_e2big_gen[0],
			 (unsigned long long)R.first_e2big_gen[1]);
	uswap_destroy(R.u);
	R.u = NULL;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_slot_handed_out_after_swapoff_returns),
	};
	long cycles = (long)(BASE_CYCLES * t_env_scale() + 0.5);

	memset(&R, 0, sizeof(R));
	R.cycles = argc > 1 ? atol(argv[1]) : (cycles < 20 ? 20 : cycles);
	R.seed = argc > 2 ? strtoull(argv[2], NULL, 0) : t_env_seed();
	if (R.cycles < 1) {
		fprintf(stderr, "usage: %s [cycles [seed]]\n", argv[0]);
		return 2;
	}
	return t_run(tests);
}
