// SPDX-License-Identifier: MIT
/*
 * device.c - swapon and swapoff: building a device's cluster descriptors
 * and lists, publishing it, and taking it away again.
 *
 * A device's lifetime is guarded by RCU: it is reachable through u->devs[]
 * (entry lookups) and through the published rings (allocation). swapoff
 * unpublishes both and waits a grace period before freeing, so a reader
 * never touches freed memory and swapoff never waits on a lock held by one.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc/alloc_internal.h"
#include "alloc/alloc_policy.h"
#include "util/rcu.h"

/* A cluster's count reached CLUSTER_SLOTS (swap_usage_add()'s role). The
 * FULL mark is set only by a CAS from exactly nr_clusters, so it can never
 * cover a device with a free slot; a racing unfill makes the CAS fail.
 * Context: ci->lock held (the count change and this call are one step). */
void device_cluster_filled(struct swap_device *si)
{
	uint32_t v = atomic_fetch_add(&si->nr_full, 1) + 1;

	if (v == si->nr_clusters &&
	    atomic_compare_exchange_strong(&si->nr_full, &v, v | DEVICE_FULL) &&
	    si->owner->avail)
		avail_sync(si); /* off the global list (del_from_avail_list) */
}

/* A full cluster lost a slot (swap_usage_sub()). Context: ci->lock held. */
void device_cluster_unfilled(struct swap_device *si)
{
	uint32_t v = atomic_fetch_sub(&si->nr_full, 1);

	if (v & DEVICE_FULL) {
		atomic_fetch_and(&si->nr_full, ~DEVICE_FULL);
		if (si->owner->avail)
			avail_sync(si); /* back on the list: first free */
	}
}

/*
 * device_inuse() - slots handed out on @si: the sum of the cluster counts,
 * less the reserved slots. Exact when nothing runs concurrently; a moving
 * snapshot otherwise. O(clusters): for reports and swapoff, not hot paths.
 */
uint64_t device_inuse(struct swap_device *si, struct pcpu_stats *st)
{
	uint64_t used = 0;

	for (uint32_t i = 0; i < si->nr_clusters; i++) {
		struct swap_cluster_info *ci = &si->cluster_info[i];

		ci_lock(ci, st);
		used += ci->count;
		ci_unlock(ci);
	}
	/* Reserved slots (header, bad, padding) are in the counts too, and so
	 * are the slots parked in slot caches, which nobody holds yet. */
	return used - ((uint64_t)si->nr_clusters * CLUSTER_SLOTS -
		       atomic_load_explicit(&si->pages, memory_order_relaxed)) -
	       atomic_load_explicit(&si->cached_slots, memory_order_relaxed);
}

/*
 * device_lookup() - the device and offset of @entry, or NULL when a bit
 * outside type and offset is set, the type is not swapped on or the offset
 * lies past its end. Every call that takes an entry goes through here.
 * Context: inside an RCU read section, which keeps the device alive.
 */
struct swap_device *device_lookup(struct uswap *u, uswap_entry_t entry,
				  uint32_t *offset)
{
	struct swap_device *si;
	uint64_t off = uswap_entry_offset(entry);

	if (unlikely(!uswap_entry_valid_bits(entry)))
		return NULL;
	si = rcu_deref(u->devs[uswap_entry_type(entry)]);
	if (!si || off >= si->max)
		return NULL;
	*offset = (uint32_t)off;
	return si;
}

/* ------------------------------------------------------------------
 * Passing over a device whose writes fail
 * ------------------------------------------------------------------ */

#define WRITE_PAUSE_NS       (10 * 1000000ull) /* after the first failure */
#define WRITE_PAUSE_MAX_SHIFT 7                /* up to 1.28 s */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * device_pause_over() - end @si's write pause if its time has come.
 * Return: whether the device may be tried again. Context: any.
 */
bool device_pause_over(struct swap_device *si)
{
	uint64_t until = atomic_load_explicit(&si->write_pause_until, memory_order_relaxed);

	if (until && now_ns() < until)
		return false;
	/* One CAS ends it; losing the race means someone else did, or a
	 * new failure restarted it. */
	atomic_compare_exchange_strong(&si->write_pause_until, &until, 0);
	return atomic_load_explicit(&si->write_pause_until, memory_order_relaxed) == 0;
}

/*
 * device_write_failed() - a write to @si failed: count it and have
 * allocation pass the device over for 10 ms << (failures in a row - 1),
 * at most 1.28 s, so the next folios go to the next device with room.
 * Context: any; no lock needed.
 */
void device_write_failed(struct swap_device *si)
{
	uint32_t streak = atomic_fetch_add(&si->write_fail_streak, 1);
	unsigned int shift = streak < WRITE_PAUSE_MAX_SHIFT ? streak : WRITE_PAUSE_MAX_SHIFT;

	atomic_fetch_add(&si->write_errors, 1);
	atomic_fetch_add(&si->write_pauses, 1);
	atomic_store(&si->write_pause_until, now_ns() + (WRITE_PAUSE_NS << shift));
}

/* device_read_failed() - a read from @si failed: counted, so the device
 * can be named to the program that lost the folio. Context: any. */
void device_read_failed(struct swap_device *si)
{
	atomic_fetch_add(&si->read_errors, 1);
}

/* device_write_done() - a write to @si succeeded: the next failure
 * starts with the shortest pause again. Writes nothing shared unless a
 * failure came before. Context: any. */
void device_write_done(struct swap_device *si)
{
	if (unlikely(atomic_load_explicit(&si->write_fail_streak, memory_order_relaxed)))
		atomic_store(&si->write_fail_streak, 0);
}

void device_free(struct swap_device *si)
{
	if (!si)
		return;
	if (si->backend && si->hooks && si->hooks->close)
		si->hooks->close(si->backend);
	if (si->cluster_info && si->hooks && si->hooks->release_cluster)
		for (uint32_t i = 0; i < si->nr_clusters; i++) /* teardown only */
			si->hooks->release_cluster(&si->cluster_info[i]);
	if (si->cluster_info)
		for (uint32_t i = 0; i < si->nr_clusters; i++) {
			free(si->cluster_info[i].ext);
			free(si->cluster_info[i].table);
		}
	table_pool_free(si);
	free(si->cluster_info);
	free(si->cursors);
	free(si);
}

static int check_swapon_args(struct uswap *u, const struct uswap_swapon_args *a)
{
	unsigned int nr_nodes = u->policy.nr_nodes ? u->policy.nr_nodes : 1;

	if (!a || (a->flags & ~USWAP_SWAPON_DISCARD))
		return -EINVAL;
	if (a->node < 0 || (unsigned int)a->node >= nr_nodes)
		return -EINVAL;
	if (a->prio != USWAP_PRIO_DEFAULT && (a->prio < 0 || a->prio > USWAP_PRIO_MAX))
		return -EINVAL;
	if (a->nr_slots < (uint64_t)USWAP_MIN_CLUSTERS * CLUSTER_SLOTS ||
	    a->nr_slots > UINT32_MAX)
		return -EINVAL;
	if (a->nr_bad && !a->bad_slots)
		return -EINVAL;
	for (size_t i = 0; i < a->nr_bad; i++)
		if (a->bad_slots[i] == 0 || a->bad_slots[i] >= a->nr_slots)
			return -EINVAL;
	return 0;
}

/* Count the header, the bad slots and the padding past the end in their
 * clusters, so those clusters never look free and offset 0 can mean
 * "none". Only a cluster with a bad block gets its table now (marking
 * it BAD there); the header and padding are marked whenever their
 * cluster takes a table. Return: usable slots, -EINVAL (listed twice),
 * -ENOMEM. */
static long setup_bad_slots(struct swap_device *si, const struct uswap_swapon_args *a)
{
	uint32_t end = si->nr_clusters * CLUSTER_SLOTS;
	long pages = (long)si->max - 1;

	si->cluster_info[0].count++;
	for (uint32_t off = si->max; off < end; off++)
		si->cluster_info[off / CLUSTER_SLOTS].count++;
	for (size_t i = 0; i < a->nr_bad; i++) {
		uint32_t off = (uint32_t)a->bad_slots[i];
		struct swap_cluster_info *ci = cluster_of(si, off);

		if (!ci->table && !cluster_table_new(si, ci))
			return -ENOMEM;
		if (ci->table->ent[off % CLUSTER_SLOTS] == ENT_BAD)
			return -EINVAL; /* listed twice */
		ci->table->ent[off % CLUSTER_SLOTS] = ENT_BAD;
		ci->count++;
		pages--;
	}
	return pages;
}

/* Free clusters go on the free list in ascending order (seed 3 removed
 * the interleave); clusters holding bad slots start on nonfull[0]. With
 * @interleave (FREELIST_INTERLEAVED) the free list is built column by
 * column of a FREELIST_COLUMNS-wide grid, 0, 32, 64, ..., 1, 33, ..., as
 * the old setup_clusters() did to spread the 64 MiB swap-cache spaces. */
static void setup_cluster_lists(struct swap_device *si, bool interleave)
{
	uint32_t step = interleave ? FREELIST_COLUMNS : 1;

	cluster_list_init(&si->free_clusters);
	cluster_list_init(&si->full_clusters);
	cluster_list_init(&si->discard_clusters);
	for (int o = 0; o < NR_ORDERS; o++) {
		cluster_list_init(&si->nonfull_clusters[o]);
		cluster_list_init(&si->frag_clusters[o]);
	}
	for (uint32_t i = 0; i < si->nr_clusters; i++) {
		struct swap_cluster_info *ci = &si->cluster_info[i];

		if (ci->count == 0)
			continue; /* the free list is built below */
		if (ci->count == CLUSTER_SLOTS) {
			ci->flags = CLUSTER_FLAG_FULL;
			cluster_list_add_tail_locked(si, &si->full_clusters, ci);
			atomic_fetch_add(&si->nr_full, 1); /* never all: pages > 0 */
		} else {
			ci->flags = CLUSTER_FLAG_NONFULL;
			cluster_list_add_tail_locked(si, &si->nonfull_clusters[0], ci);
		}
	}
	for (uint32_t col = 0; col < step; col++) {
		for (uint32_t i = col; i < si->nr_clusters; i += step) {
			struct swap_cluster_info *ci = &si->cluster_info[i];

			if (ci->count)
				continue;
			ci->flags = CLUSTER_FLAG_FREE;
			cluster_list_add_tail_locked(si, &si->free_clusters, ci);
		}
	}
}

static struct swap_device *device_new(struct uswap *u, const struct uswap_swapon_args *a,
				      int *err)
{
	struct swap_device *si = aligned_alloc(CACHELINE, sizeof(*si));
	long pages;

	*err = -ENOMEM;
	if (!si)
		return NULL;
	memset(si, 0, sizeof(*si));
	si->max = (uint32_t)a->nr_slots;
	si->nr_clusters = (si->max + CLUSTER_SLOTS - 1) / CLUSTER_SLOTS;
	si->nr_cpus = u->nr_cpus;
	si->prio = a->prio;
	si->prio_auto = a->prio == USWAP_PRIO_DEFAULT;
	si->node = a->node;
	si->owner = u;
	si->cluster_info = calloc(si->nr_clusters, sizeof(*si->cluster_info));
	si->cursors = aligned_alloc(CACHELINE, u->nr_cpus * sizeof(*si->cursors));
	if (!si->cluster_info || !si->cursors)
		goto err;
	memset(si->cursors, 0, u->nr_cpus * sizeof(*si->cursors));
	pages = setup_bad_slots(si, a);
	*err = pages < 0 ? (int)pages : -ENOSPC;
	if (pages <= 0)
		goto err;
	si->pages = (uint32_t)pages;
	setup_cluster_lists(si, u->policy.freelist == USWAP_FREELIST_INTERLEAVED);
	return si;
err:
	device_free(si);
	return NULL;
}

void global_lock(struct uswap *u)
{
	struct lock_stat *ls = &this_cpu_stats(u)->locks[USWAP_LOCK_GLOBAL];

	stat_inc(&ls->acquired);
	if (pthread_mutex_trylock(&u->swapon_lock)) {
		stat_inc(&ls->contended);
		pthread_mutex_lock(&u->swapon_lock);
	}
}

void global_unlock(struct uswap *u)
{
	pthread_mutex_unlock(&u->swapon_lock);
}

/*
 * device_swapon() - uswap_swapon() without the backend handling, which is
 * the swap layer's (src/swap/swapon.c): @backend is kept opaque and only
 * reached through @hooks, which close it when the device goes (or here,
 * if swapon fails after
 * taking it). Return: as uswap_swapon().
 */
int device_swapon(struct uswap *u, const struct uswap_swapon_args *args,
		  void *backend, const struct device_hooks *hooks, unsigned int dev_flags)
{
	struct swap_device *si;
	int type, err = check_swapon_args(u, args);

	if (err)
		return err;
	si = device_new(u, args, &err);
	if (!si)
		return err;

	global_lock(u);
	for (type = 0; type < USWAP_MAX_DEVICES && u->devs[type]; type++)
		;
	if (type == USWAP_MAX_DEVICES) {
		err = -EMFILE;
		goto fail;
	}
	si->type = type;
	si->backend_is_file = dev_flags & DEV_FLAG_FILE;
	si->page_discard = (dev_flags & DEV_FLAG_PAGE_DISCARD) ||
			   (args->flags & USWAP_SWAPON_DISCARD);
	if (policy_legacy(u) && si->prio_auto)
		si->prio = --u->least_priority; /* -2, -3, ... (<= 6.18) */
	if (args->name)
		snprintf(si->name, sizeof(si->name), "%s", args->name);
	else
		snprintf(si->name, sizeof(si->name), "dev%d", type);
	/* Complete before anyone can see it: a swap-out that finds the
	 * device in a ring must find its backend too (the RFC's single
	 * swapon writer publishes a finished device). */
	si->backend = backend;
	si->hooks = hooks;
	atomic_store(&si->writeok, true);
	rcu_publish(&u->devs[type], si);
	/* Its table pool starts empty (no memory while nothing is in use):
	 * the first allocation fills it before it walks. */
	atomic_fetch_or(&u->tables_low, UINT32_C(1) << type);
	err = ring_set_rebuild(u);
	if (err) {
		rcu_publish(&u->devs[type], NULL);
		avail_rebuild(u);
		rcu_wait_readers(&u->rcu_hb);
		if (policy_legacy(u) && si->prio_auto)
			u->least_priority++;
		goto fail;
	}
	global_unlock(u);
	return type;
fail:
	global_unlock(u);
	si->backend = NULL; /* a failed swapon leaves it with the caller */
	device_free(si);
	return err;
}

/* LEGACY_PRIO: when an auto-numbered device leaves, every later one moves
 * up by one (@delta +1), as the kernel's swapoff did; -1 undoes it when
 * the swapoff fails. Context: u->swapon_lock held. */
static void legacy_renumber(struct uswap *u, struct swap_device *si, int delta)
{
	if (!policy_legacy(u) || !si->prio_auto)
		return;
	for (int type = 0; type < USWAP_MAX_DEVICES; type++) {
		struct swap_device *p = u->devs[type];

		if (p && p != si && p->prio_auto &&
		    (delta > 0 ? p->prio < si->prio : p->prio <= si->prio))
			p->prio += delta;
	}
	u->least_priority += delta;
}

/* A CPU forgets its PERCPU_GLOBAL cluster of @order on @si: the cluster
 * is filed by fill level, so a device put back after a failed swapoff
 * has no cluster that no CPU will ever use again. Context: pc->lock. */
static void global_cursor_forget(struct uswap_pcpu *pc, struct swap_device *si,
				 unsigned int order)
{
	struct swap_cluster_info *ci;

	if (pc->global.next[order]) {
		ci = cluster_of(si, pc->global.next[order]);
		ci_lock(ci, &pc->stats);
		if (ci->flags == CLUSTER_FLAG_PERCPU && ci->order == order)
			cluster_relocate(si, ci, &pc->stats);
		ci_unlock(ci);
	}
	pc->global.dev[order] = NULL;
	pc->global.next[order] = 0;
}

/* Make every CPU forget @si: its slots in the slot caches go back to free,
 * its PERCPU_GLOBAL cursors are cleared (flush_percpu_swap_cluster()).
 * Context: u->swapon_lock held; no allocator can choose @si any more. */
static void pcpu_forget_device(struct uswap *u, struct swap_device *si)
{
	rcu_read_begin();
	for (unsigned int cpu = 0; cpu < u->nr_cpus; cpu++) {
		struct uswap_pcpu *pc = &u->pcpu[cpu];

		spin_lock(&pc->lock, lock_stat_of(&pc->stats, USWAP_LOCK_PERCPU));
		if (pc->slot_cache)
			slot_cache_drain(u, pc, si, &pc->stats);
		for (unsigned int o = 0; o < NR_ORDERS; o++)
			if (pc->global.dev[o] == si)
				global_cursor_forget(pc, si, o);
		spin_unlock(&pc->lock);
	}
	rcu_read_end(&u->rcu_hb);
}

/*
 * device_disable() - stop allocation on @si: clear writeok, publish rings
 * without it and wait a grace period. An allocator that still reaches the
 * device through the old ring is refused under ci->lock, and every
 * allocation (and every swap-out, which runs in one read section) that
 * began before is over when this returns. Slots of @si parked in slot
 * caches are freed (the kernel drained its slot caches at swapoff).
 * Return: 0 or -ENOMEM (nothing changed). Context: u->swapon_lock held.
 */
int device_disable(struct uswap *u, struct swap_device *si)
{
	int err;

	atomic_store(&si->writeok, false);
	legacy_renumber(u, si, +1);
	err = ring_set_rebuild(u);
	if (err) {
		legacy_renumber(u, si, -1);
		atomic_store(&si->writeok, true);
		return err;
	}
	pcpu_forget_device(u, si);
	return 0;
}

/* Put a disabled device back, exactly as it was. Context: swapon_lock. */
void device_reenable(struct uswap *u, struct swap_device *si)
{
	atomic_store(&si->writeok, true);
	legacy_renumber(u, si, -1);
	while (ring_set_rebuild(u))
		WARN_ONCE(1, "swapoff: out of memory re-adding %s to its ring; retrying",
			  si->name);
}

/* Reap @si's backend until no swap-path request is in flight on it: a
 * swap queue's owner may be slow to reap, or be this very thread. (The
 * backends' close drains too; waiting here first lets the grace period
 * after it cover every reaper still holding the backend.) */
static void device_wait_io(struct swap_device *si)
{
	const struct timespec pause = { 0, 100000 }; /* 0.1 ms */

	while (atomic_load_explicit(&si->io_inflight, memory_order_acquire)) {
		if (si->backend && si->hooks && si->hooks->reap)
			si->hooks->reap(si->backend);
		nanosleep(&pause, NULL);
	}
}

/* Unpublish and free a disabled, empty device once no lookup can still
 * see it and no request is in flight on it. Context: u->swapon_lock. */
void device_remove(struct uswap *u, struct swap_device *si)
{
	pcpu_forget_device(u, si); /* a cursor set during the unuse */
	rcu_publish(&u->devs[si->type], NULL);
	/* Entry lookups (free, dup, swap-in); and every submit that found
	 * the device has counted its requests in io_inflight. */
	rcu_wait_readers(&u->rcu_hb);
	device_wait_io(si);
	/* Every reaper that saw one of those requests has left the backend. */
	rcu_wait_readers(&u->rcu_hb);
	device_free(si);
}

/*
 * device_discard() - discard up to @max clusters waiting on @si's discard
 * list and free them (swap_do_scheduled_discard()): each is taken off the
 * list (DISCARDING keeps allocators away), the backend forgets it through
 * the discard hook with no cluster or list lock held, then it goes on the
 * free list. A device without a backend (USWAP_SWAPON_DISCARD) has nothing
 * to forget; a refused discard frees the cluster all the same.
 * Return: clusters discarded.
 * Context: inside an RCU read section pinning @si; no ci/si lock held.
 */
uint32_t device_discard(struct swap_device *si, uint32_t max, struct pcpu_stats *st)
{
	const struct device_hooks *h = si->hooks;
	struct swap_cluster_info *ci;
	uint32_t n = 0;

	while (n < max && (ci = cluster_isolate_as(si, &si->discard_clusters,
						   CLUSTER_FLAG_DISCARDING, st))) {
		ci_unlock(ci);
		if (si->backend && h && h->discard)
			h->discard(si->backend, cluster_first(si, ci), CLUSTER_SLOTS);
		ci_lock(ci, st);
		cluster_move(si, ci, CLUSTER_FLAG_FREE, st);
		ci_unlock(ci);
		probe_step(USWAP_STEP_DISCARD, 1);
		n++;
	}
	stat_add(&st->discards, n);
	return n;
}
