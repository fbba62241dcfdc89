/* SPDX-License-Identifier: MIT */
/*
 * Description: device selection across and inside priorities (queue/):
 * strict priority (nothing comes from a lower priority while a higher one
 * can serve the order, a large folio is never pushed down because a peer
 * is fragmented), unprioritised (-1) devices sharing one round-robin ring
 * below priority 0, and equal-priority devices staying balanced under two
 * allocating CPUs.
 */
#include "t_util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static struct uswap *new_instance(void **state, unsigned int ring_quota)
{
	struct uswap *u = t_create(2, ring_quota);

	*state = u;
	return u;
}

/* A growable list of live order-0 entries, freed in one go. */
struct entries {
	uswap_entry_t *e;
	size_t nr, cap;
};

static void entries_push(struct entries *l, uswap_entry_t e)
{
	if (l->nr == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->e = realloc(l->e, l->cap * sizeof(*l->e));
		t_true(l->e != NULL);
	}
	l->e[l->nr++] = e;
}

static void entries_put_all(struct uswap *u, struct entries *l)
{
	for (size_t i = 0; i < l->nr; i++)
		t_put(u, l->e[i], 0);
	free(l->e);
	memset(l, 0, sizeof(*l));
}

/*
 * The lower-priority device is swapped on first, so creation order cannot
 * be what puts the 10 in front.
 */
static void test_lower_priority_unused_while_higher_has_a_free_slot(void **state)
{
	struct uswap *u = new_instance(state, 0);
	int t5 = t_swapon(u, 4 * USWAP_CLUSTER_SLOTS, 5);
	int t10 = t_swapon(u, 4 * USWAP_CLUSTER_SLOTS, 10);
	uint64_t pages10 = t_info(u, t10).pages;
	struct entries l = { 0 };
	uswap_entry_t e;

	t_eq(t_info(u, t10).prio, 10);
	t_eq(t_info(u, t5).prio, 5);
	for (uint64_t i = 0; i < pages10; i++) {
		e = t_alloc(u, 0);
		if (uswap_entry_type(e) != (unsigned int)t10)
			fail_msg("allocation %llu of %llu came from type %u (prio 5) "
				 "while the prio-10 device had free slots",
				 (unsigned long long)i + 1,
				 (unsigned long long)pages10, uswap_entry_type(e));
		entries_push(&l, e);
	}
	t_eq_u64(t_info(u, t10).inuse, pages10);
	t_eq_u64(t_info(u, t5).inuse, 0);

	/* The 10 is full: the next slot comes from the 5. */
	e = t_alloc(u, 0);
	t_eq(uswap_entry_type(e), t5);
	entries_push(&l, e);

	/* One slot freed on the 10: it serves again, ahead of the 5. */
	t_put(u, l.e[0], 0);
	l.e[0] = t_alloc(u, 0);
	t_eq(uswap_entry_type(l.e[0]), t10);
	t_eq_u64(t_info(u, t5).inuse, 1);
	t_check(u);
	entries_put_all(u, &l);
	t_check(u);
}

/*
 * Two prio-10 peers are fragmented (every other slot free, so no run of
 * 16); a prio-5 device is empty. An order-4 folio must get -E2BIG ("split
 * it") and not be served from the 5; order 0 still comes from the 10s.
 */
static void test_large_folio_never_falls_to_lower_priority_when_peers_fragmented(void **state)
{
	struct uswap *u = new_instance(state, 0);
	const uint64_t nr_slots = 4 * USWAP_CLUSTER_SLOTS;
	int t5 = t_swapon(u, nr_slots, 5);
	int t10a = t_swapon(u, nr_slots, 10);
	int t10b = t_swapon(u, nr_slots, 10);
	uint64_t pages10 = t_info(u, t10a).pages + t_info(u, t10b).pages;
	struct entries keep = { 0 };
	struct uswap_stats before, after;
	uswap_entry_t e;

	struct entries all = { 0 };

	for (uint64_t i = 0; i < pages10; i++) {
		e = t_alloc(u, 0);
		t_true(uswap_entry_type(e) == (unsigned int)t10a ||
		       uswap_entry_type(e) == (unsigned int)t10b);
		entries_push(&all, e);
	}
	/* Both 10s are full; free the odd offsets, keep the even ones. */
	for (size_t i = 0; i < all.nr; i++) {
		if (uswap_entry_offset(all.e[i]) % 2)
			t_put(u, all.e[i], 0);
		else
			entries_push(&keep, all.e[i]);
	}
	free(all.e);
	t_eq_u64(t_info(u, t5).inuse, 0);
	t_check(u);

	before = t_stats(u);
	t_eq(uswap_alloc(u, 4, &e), -E2BIG);
	after = t_stats(u);
	t_eq_u64(after.swpout_fallback[4] - before.swpout_fallback[4], 1);
	t_eq_u64(t_info(u, t5).inuse, 0);

	e = t_alloc(u, 0);
	t_true(uswap_entry_type(e) != (unsigned int)t5);
	entries_push(&keep, e);
	t_check(u);
	entries_put_all(u, &keep);
	t_check(u);
}

/* -1 is below 0: the prio-0 device serves everything it can first. */
static void test_default_priority_ranks_below_priority_zero(void **state)
{
	struct uswap *u = new_instance(state, 0);
	int tdef = t_swapon(u, 2 * USWAP_CLUSTER_SLOTS, USWAP_PRIO_DEFAULT);
	int t0 = t_swapon(u, 2 * USWAP_CLUSTER_SLOTS, 0);
	uint64_t pages0 = t_info(u, t0).pages;
	struct entries l = { 0 };
	uswap_entry_t e;

	t_eq(t_info(u, tdef).prio, USWAP_PRIO_DEFAULT);
	for (uint64_t i = 0; i < pages0; i++) {
		e = t_alloc(u, 0);
		t_eq(uswap_entry_type(e), t0);
		entries_push(&l, e);
	}
	e = t_alloc(u, 0);
	t_eq(uswap_entry_type(e), tdef);
	entries_push(&l, e);
	entries_put_all(u, &l);
	t_check(u);
}

/*
 * Unprioritised devices are not renumbered -2, -3, ... and filled one
 * after another (what the kernel does): they all keep prio -1 and this
 * CPU's reader rotates over them every ring_quota slots (here: order-0
 * allocations).
 */
static void test_default_priority_devices_share_round_robin(void **state)
{
	enum { NR_DEV = 3, QUOTA = 8, ROUNDS = 40 };
	struct uswap *u = new_instance(state, QUOTA);
	int types[NR_DEV];
	uint64_t count[USWAP_MAX_DEVICES] = { 0 };
	struct entries l = { 0 };
	unsigned int run = 0, longest_run = 0, last_type = ~0u;
	const uint64_t total = NR_DEV * QUOTA * ROUNDS;

	for (int d = 0; d < NR_DEV; d++) {
		types[d] = t_swapon(u, 16 * USWAP_CLUSTER_SLOTS, USWAP_PRIO_DEFAULT);
		t_eq(t_info(u, types[d]).prio, USWAP_PRIO_DEFAULT);
	}
	for (uint64_t i = 0; i < total; i++) {
		uswap_entry_t e = t_alloc(u, 0);
		unsigned int type = uswap_entry_type(e);

		count[type]++;
		run = type == last_type ? run + 1 : 1;
		last_type = type;
		if (run > longest_run)
			longest_run = run;
		entries_push(&l, e);
	}
	for (int d = 0; d < NR_DEV; d++) {
		uint64_t c = count[types[d]];

		if (c + QUOTA < total / NR_DEV || c > total / NR_DEV + QUOTA)
			fail_msg("device %d got %llu of %llu allocations; round robin "
				 "with quota %d gives %llu +- %d",
				 types[d], (unsigned long long)c,
				 (unsigned long long)total, QUOTA,
				 (unsigned long long)(total / NR_DEV), QUOTA);
	}
	/* The reader moves on after its quota, so no device gets a longer run. */
	if (longest_run > QUOTA)
		fail_msg("one device served %u allocations in a row (quota %d)",
			 longest_run, QUOTA);
	entries_put_all(u, &l);
	t_check(u);
}

/*
 * The quota is charged in slots: with order-2 folios and a quota of 16
 * slots the reader moves on after 4 folios, and the devices stay even by
 * space used.
 */
static void test_ring_quota_is_charged_in_slots(void **state)
{
	enum { NR_DEV = 2, QUOTA = 16, ORDER = 2, FOLIOS = 400 };
	struct uswap *u = new_instance(state, QUOTA);
	int types[NR_DEV];
	uint64_t slots[USWAP_MAX_DEVICES] = { 0 };
	uswap_entry_t e[FOLIOS];
	unsigned int run = 0, longest_run = 0, last_type = ~0u;

	for (int d = 0; d < NR_DEV; d++)
		types[d] = t_swapon(u, 8 * USWAP_CLUSTER_SLOTS, 4);
	for (int i = 0; i < FOLIOS; i++) {
		unsigned int type;

		e[i] = t_alloc(u, ORDER);
		type = uswap_entry_type(e[i]);
		slots[type] += 1u << ORDER;
		run = type == last_type ? run + 1 : 1;
		last_type = type;
		longest_run = run > longest_run ? run : longest_run;
	}
	if (longest_run > QUOTA >> ORDER)
		fail_msg("%u order-%d folios in a row from one device; a quota of "
			 "%d slots allows %d", longest_run, ORDER, QUOTA,
			 QUOTA >> ORDER);
	for (int d = 0; d < NR_DEV; d++) {
		uint64_t want = (FOLIOS << ORDER) / NR_DEV;

		t_eq_u64(t_info(u, types[d]).inuse, slots[types[d]]);
		if (slots[types[d]] + QUOTA < want || slots[types[d]] > want + QUOTA)
			fail_msg("device %d got %llu slots, expected %llu +- %d",
				 types[d], (unsigned long long)slots[types[d]],
				 (unsigned long long)want, QUOTA);
	}
	for (int i = 0; i < FOLIOS; i++)
		t_put(u, e[i], ORDER);
	t_check(u);
}

/* ------------------------------------------------------------------ */

enum { BAL_DEVICES = 4, BAL_CLUSTERS = 1024, BAL_ALLOCS = 1000000, BAL_THREADS = 2 };

struct bal_thread {
	struct uswap *u;
	int cpu;
	size_t nr;
	uswap_entry_t *e;
};

static void *bal_worker(void *arg)
{
	struct bal_thread *t = arg;

	uswap_thread_set_cpu(t->cpu);
	for (size_t i = 0; i < t->nr; i++) {
		int rc = uswap_alloc(t->u, 0, &t->e[i]);

		if (rc != 0) {
			t_fail_async("cpu %d: allocation %zu failed: %s", t->cpu,
				     i, t_errname(rc));
			t->nr = i;
			break;
		}
	}
	return NULL;
}

/*
 * 10^6 order-0 allocations from two CPUs over four equal-priority devices
 * of 524288 slots each (half of the ~2M slots). Each CPU's reader rotates
 * by quota, so the devices end up within 5% of each other.
 */
static void test_equal_priority_devices_stay_balanced(void **state)
{
	struct uswap *u = new_instance(state, 0);
	struct bal_thread th[BAL_THREADS];
	pthread_t tid[BAL_THREADS];
	int types[BAL_DEVICES];
	uint64_t min = UINT64_MAX, max = 0, sum = 0;

	t_async_reset();
	for (int d = 0; d < BAL_DEVICES; d++)
		types[d] = t_swapon(u, (uint64_t)BAL_CLUSTERS * USWAP_CLUSTER_SLOTS, 7);
	for (int i = 0; i < BAL_THREADS; i++) {
		th[i] = (struct bal_thread){ u, i, BAL_ALLOCS / BAL_THREADS, NULL };
		th[i].e = malloc(th[i].nr * sizeof(uswap_entry_t));
		t_true(th[i].e != NULL);
		t_eq(pthread_create(&tid[i], NULL, bal_worker, &th[i]), 0);
	}
	for (int i = 0; i < BAL_THREADS; i++)
		pthread_join(tid[i], NULL);
	t_assert_no_async_failure("balance workers");

	for (int d = 0; d < BAL_DEVICES; d++) {
		uint64_t inuse = t_info(u, types[d]).inuse;

		printf("# device %d: %llu slots in use\n", types[d],
		       (unsigned long long)inuse);
		min = inuse < min ? inuse : min;
		max = inuse > max ? inuse : max;
		sum += inuse;
	}
	t_eq_u64(sum, BAL_ALLOCS);
	printf("# balance: used max/min = %.4f\n", min ? (double)max / (double)min : 0.0);
	if (min == 0 || (double)max / (double)min > 1.05)
		fail_msg("used max/min = %llu/%llu, expected <= 1.05",
			 (unsigned long long)max, (unsigned long long)min);
	t_check(u);

	for (int i = 0; i < BAL_THREADS; i++) {
		for (size_t k = 0; k < th[i].nr; k++)
			t_put(u, th[i].e[k], 0);
		free(th[i].e);
	}
	t_eq_u64(t_total_inuse(u), 0);
	t_check(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lower_priority_unused_while_higher_has_a_free_slot, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_large_folio_never_falls_to_lower_priority_when_peers_fragmented, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_default_priority_ranks_below_priority_zero, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_default_priority_devices_share_round_robin, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_ring_quota_is_charged_in_slots, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_equal_priority_devices_stay_balanced, t_setup_cpu0, t_teardown_instance),
	};

	return t_run(tests);
}
