// SPDX-License-Identifier: MIT
/*
 * queue.c - per-priority allocation queues (seed 5, "mm/swap: introduce
 * per-priority allocation queues"): device selection without a shared
 * rotation point.
 *
 * Each priority has a ring of its devices that never changes once
 * published. Each CPU keeps a reader into every ring and moves it to the
 * next device after `ring_quota` slots of allocations, so equal-priority devices
 * fill evenly (seed 4's round robin) while no two CPUs write the same
 * state. The quota is charged in slots, not folios, so devices stay even
 * by space when orders are mixed. swapon and swapoff build a new ring set and publish it with RCU;
 * a full device stays in its ring and is skipped (DEVICE_FULL).
 */
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc.h"
#include "util/rcu.h"

void ring_set_free(struct ring_set *rs)
{
	if (!rs)
		return;
	for (unsigned int i = 0; i < rs->nr; i++) {
		free(rs->rings[i]->readers);
		free(rs->rings[i]);
	}
	free(rs);
}

static struct prio_ring *ring_new(struct uswap *u, int prio)
{
	struct prio_ring *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->prio = prio;
	r->readers = aligned_alloc(CACHELINE, u->nr_cpus * sizeof(*r->readers));
	if (!r->readers) {
		free(r);
		return NULL;
	}
	return r;
}

/* Start CPU c on device c mod nr, so CPUs spread over the ring at once. */
static void ring_init_readers(struct uswap *u, struct prio_ring *r)
{
	for (unsigned int cpu = 0; cpu < u->nr_cpus; cpu++) {
		r->readers[cpu].cursor = cpu % r->nr;
		r->readers[cpu].left = u->ring_quota;
	}
}

/* Find or append the ring for @prio, keeping rings[] highest first. */
static struct prio_ring *ring_set_get(struct uswap *u, struct ring_set *rs, int prio)
{
	unsigned int i;

	for (i = 0; i < rs->nr && rs->rings[i]->prio >= prio; i++)
		if (rs->rings[i]->prio == prio)
			return rs->rings[i];
	struct prio_ring *r = ring_new(u, prio);

	if (!r)
		return NULL;
	memmove(&rs->rings[i + 1], &rs->rings[i], (rs->nr - i) * sizeof(r));
	rs->rings[i] = r;
	rs->nr++;
	return r;
}

/*
 * ring_set_rebuild() - publish rings holding every writeok device, in
 * type order inside a priority, and free the old set after a grace
 * period. On return no allocator can still be using a device that is not
 * writeok (each allocation runs inside one RCU read section).
 * Return: 0, or -ENOMEM with the old set still published.
 * Context: u->swapon_lock held; may sleep.
 */
int ring_set_rebuild(struct uswap *u)
{
	struct ring_set *rs = calloc(1, sizeof(*rs)), *old;

	if (!rs)
		return -ENOMEM;
	for (int type = 0; type < USWAP_MAX_DEVICES; type++) {
		struct swap_device *si = u->devs[type];
		struct prio_ring *r;

		if (!si || !atomic_load(&si->writeok))
			continue;
		r = ring_set_get(u, rs, si->prio);
		if (!r) {
			ring_set_free(rs);
			return -ENOMEM;
		}
		r->dev[r->nr++] = si;
	}
	for (unsigned int i = 0; i < rs->nr; i++)
		ring_init_readers(u, rs->rings[i]);

	old = u->rings;
	rcu_publish(&u->rings, rs);
	rcu_wait_readers(&u->rcu_hb);
	ring_set_free(old);
	return 0;
}

/*
 * ring_alloc() - allocate from the devices of one priority, starting at
 * this CPU's reader and visiting each peer once (the RFC's task-local
 * cursor: a retry walk sees every same-priority device exactly once).
 * Return: 0; -E2BIG when some device of the ring has room but none has a
 * run of this order (the caller must split, never fall lower); -ENOSPC
 * when every device is full or none could give an order-0 slot.
 * Context: this CPU's lock held; inside an RCU read section.
 */
int ring_alloc(struct alloc_ctx *ctx, struct prio_ring *r, unsigned int order,
	       uswap_entry_t *entry)
{
	struct ring_reader *rd = &r->readers[ctx->cpu];
	unsigned int quota = ctx->u->ring_quota;
	bool any_room = false;
	uint32_t off;

	if (rd->left == 0) {
		rd->cursor = (rd->cursor + 1) % r->nr;
		rd->left = quota;
		stat_inc(&ctx->st->ring_advance);
	}
	for (unsigned int i = 0; i < r->nr; i++) {
		unsigned int idx = (rd->cursor + i) % r->nr;
		struct swap_device *si = r->dev[idx];

		if (!device_available(si))
			continue; /* full or going away: masked, not removed */
		if (device_alloc(ctx, si, order, &off)) {
			/* Room counts only if the device is still there: one
			 * that filled up or began swapoff meanwhile is no
			 * reason to split the folio. */
			any_room |= device_available(si);
			continue;
		}
		if (i) { /* the reader's device could not serve: move on */
			rd->cursor = idx;
			rd->left = quota;
			stat_inc(&ctx->st->ring_advance);
		}
		/* Charged in slots, so a mix of orders balances by space used:
		 * one order-9 folio spends a whole quota of 64. */
		rd->left = rd->left > (1u << order) ? rd->left - (1u << order) : 0;
		*entry = uswap_entry((unsigned int)si->type, off);
		return 0;
	}
	return any_room && order > 0 ? -E2BIG : -ENOSPC;
}
